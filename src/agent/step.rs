//! One step of the agent loop: stream the model's output, then run the tool
//! calls it made. A call that suspends (or awaits approval) becomes a pending
//! call the step ends with; the runtime decides what to store and when.

use std::future::Future;

use tokio_stream::StreamExt;
use tracing::Instrument;

use super::{Agent, ApprovalGate, ApprovalRule, RuleDecision, RuleRun};
use crate::domain::{
    Chunk, Decision, DecisionOutcome, Message, PendingCall, PendingCalls, RunOptions, RunState, Timestamp,
    ToolCall, ToolOutput, Usage, Waiting,
};
use crate::model::{ModelError, ModelEvent, ModelRequest};
use crate::tools::{ToolContext, ToolOutcome};

/// Where the loop reports what happens. The runtime's emitter numbers,
/// streams and stores what it receives.
pub trait ChunkSink: Send {
    fn emit(&mut self, chunk: Chunk) -> impl Future<Output = ()> + Send;

    /// Called just before a tool with side effects runs (see
    /// [`crate::tools::Tool::has_side_effects`]): a run's sink makes sure
    /// the run is stored by then, and returns only if it is.
    fn before_side_effects(&mut self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// How a step ended.
#[derive(Clone, Debug, PartialEq)]
pub enum StepEnd {
    /// The model called tools and every call has its result: step again.
    ToolsDone,
    /// The model answered without calling a tool, with this text: the run
    /// is complete.
    Stopped { final_text: String },
    /// These calls wait for Resume.
    Suspended(PendingCalls),
}

impl Agent {
    /// Runs one model step and the tool calls it made. The model is sent
    /// `earlier` (the history of the run's thread; empty without one) and
    /// the run's messages, windowed as the agent says. `run` is what the
    /// tools' approval rules read of the run.
    pub async fn step<S: ChunkSink>(
        &self,
        state: &mut RunState,
        options: &RunOptions,
        run: RuleRun<'_>,
        earlier: &[Message],
        sink: &mut S,
    ) -> Result<StepEnd, ModelError> {
        state.steps += 1;
        let step = state.steps;
        sink.emit(Chunk::StepStart { step }).await;

        let conversation = super::compose(&state.messages, earlier);
        let messages = self.history.apply(&conversation);
        let request = ModelRequest {
            messages: &messages,
            tools: self.tools.specs().collect(),
        };
        let stream = self.model.stream(request).await;
        drop(messages);
        drop(conversation);
        let mut stream = stream?;
        let mut text = String::new();
        let mut calls = Vec::new();
        // Calls whose arguments did not parse, with the error result the
        // model gets back for them (so that it can try again).
        let mut unreadable = std::collections::HashMap::new();
        let mut usage = Usage::default();
        while let Some(event) = stream.next().await {
            match event? {
                ModelEvent::TextDelta(delta) => {
                    text.push_str(&delta);
                    sink.emit(Chunk::TextDelta { text: delta }).await;
                }
                ModelEvent::ToolCall(call) => {
                    sink.emit(Chunk::ToolCall {
                        call: call.clone(),
                        original_args: None,
                    })
                    .await;
                    calls.push(call);
                }
                ModelEvent::InvalidToolCall { call, error } => {
                    sink.emit(Chunk::ToolCall {
                        call: call.clone(),
                        original_args: None,
                    })
                    .await;
                    let message = format!("Invalid JSON in arguments for {}: {error}", call.name);
                    unreadable.insert(call.id.clone(), message);
                    calls.push(call);
                }
                ModelEvent::Finish(crate::model::StopReason::MaxTokens) => {
                    tracing::warn!(step, "the model reached its output token limit");
                }
                ModelEvent::Finish(_) => {}
                ModelEvent::Usage(step_usage) => usage += step_usage,
            }
        }
        drop(stream);
        state.usage += usage;

        let end = if calls.is_empty() {
            StepEnd::Stopped {
                final_text: text.clone(),
            }
        } else {
            StepEnd::ToolsDone
        };
        let mut pending = Vec::new();
        state.messages.push(Message::Assistant {
            content: text,
            tool_calls: calls.clone(),
        });
        for call in calls {
            if let Some(message) = unreadable.remove(&call.id) {
                record_result(state, &call, ToolOutput::error(message), sink).await;
                continue;
            }
            let gate = self.approval_gate(&call.name, &call.args, run, options.require_tool_approval);
            let needs_approval = match gate {
                ApprovalGate::Rule(rule) => match rule.then {
                    RuleDecision::Approve => {
                        self.record_rule(state, &call, rule, DecisionOutcome::Approved);
                        false
                    }
                    RuleDecision::Ask => true,
                    RuleDecision::Decline => {
                        self.record_rule(state, &call, rule, DecisionOutcome::Declined);
                        let output = ToolOutput::error(super::declined_message(&call.name, &rule.reason));
                        record_result(state, &call, output, sink).await;
                        continue;
                    }
                },
                ApprovalGate::Required => true,
                ApprovalGate::Free => false,
            };
            if needs_approval {
                pending.push(PendingCall {
                    call,
                    waiting: Waiting::Approval,
                    since: None,
                });
                continue;
            }
            if self.has_side_effects(&call.name) {
                sink.before_side_effects().await;
            }
            let span = tracing::info_span!("tool_call", tool_call_id = %call.id, tool = %call.name);
            let outcome = self
                .call_tool(&call.name, &call.args, ToolContext::IN_RUN)
                .instrument(span)
                .await;
            pending.extend(self.record_outcome(state, call, outcome, sink).await);
        }
        sink.emit(Chunk::StepFinish { step, usage }).await;

        Ok(PendingCalls::new(pending).map_or(end, StepEnd::Suspended))
    }

    /// Records that `rule` decided `call` (`outcome`), as the run's
    /// decision on it.
    fn record_rule(
        &self,
        state: &mut RunState,
        call: &ToolCall,
        rule: &ApprovalRule,
        outcome: DecisionOutcome,
    ) {
        let place = (self.id.as_str(), call.name.as_str(), rule.index);
        let decision = Decision::by_rule(&call.id, outcome, place, &rule.when, Timestamp::now());
        tracing::info!(
            tool_call_id = %call.id,
            outcome = outcome.as_str(),
            decided_by = %decision.decided_by,
            source = decision.source.as_str(),
            rule = %rule.when,
            "call decided"
        );
        state.decisions.push(decision);
    }

    /// Records how a tool call ended: a result goes to the conversation (and
    /// the sink); a suspension is returned, a call to wait on.
    pub async fn record_outcome<S: ChunkSink>(
        &self,
        state: &mut RunState,
        call: ToolCall,
        outcome: ToolOutcome,
        sink: &mut S,
    ) -> Option<PendingCall> {
        match outcome {
            ToolOutcome::Done(output) => {
                record_result(state, &call, output, sink).await;
                None
            }
            ToolOutcome::Suspend(payload) => Some(PendingCall {
                call,
                waiting: Waiting::Suspended { payload },
                since: None,
            }),
        }
    }
}

/// Adds a call's result to the conversation and reports it.
async fn record_result<S: ChunkSink>(
    state: &mut RunState,
    call: &ToolCall,
    output: ToolOutput,
    sink: &mut S,
) {
    sink.emit(state.record_result(call, output)).await;
}
