//! A run's chunks as AG-UI events, in an order the official client's
//! verification accepts: `RUN_STARTED`, steps (`step N`), text messages
//! opened before their first delta and closed before anything else, tool
//! calls as start/args/end (each with the `parentMessageId` of its step's
//! assistant message), results, and one `RUN_FINISHED` or `RUN_ERROR` to
//! end. Every step and message this stream opened is closed before the
//! end; a step a resumed stream did not open is not finished in it, except
//! the step a resumption continues: its results come inside it. `usage`
//! counts this stream's steps only. `RUN_FINISHED`'s outcome is shaped for
//! the client's [`Generation`].

use serde_json::{json, Value};

use super::input::Generation;
use crate::domain::{Chunk, Event, FinishReason, PendingCall, RunFailure, RunId, Timestamp, Usage, Waiting};

/// How a stream ended, when it ended suspended: the calls it waits on.
#[derive(Debug)]
pub(super) struct Suspension {
    pub pending: Vec<PendingCall>,
    /// The latest `expires_at` of a suspended call in this stream.
    pub expires_at: Option<Timestamp>,
    pub usage: Usage,
}

/// How a run (or its replay) ended, before it is shaped for a generation.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Outcome {
    /// Completed, with the final text.
    Success(Option<String>),
    /// Waiting on these frontend tool calls and nothing else.
    PendingTools(Vec<String>),
    /// Waiting on these interrupts.
    Interrupt(Vec<Value>),
    Cancelled,
}

impl Outcome {
    /// `RUN_FINISHED`'s `outcome`, its `result`, and what agentd adds
    /// under `metadata.agentd`, as `generation` reads them. The 0.0.x
    /// schema allows nothing in a `success` outcome but its type, and has
    /// no `cancelled`: there, a run that waits on frontend tools or was
    /// cancelled finishes with `success` (the client derives the pending
    /// calls from the stream, as CopilotKit does), and says which in the
    /// event's metadata.
    fn shape(self, generation: Generation) -> (Value, Option<String>, Option<Value>) {
        let success = json!({"type": "success"});
        match (self, generation) {
            (Self::Success(result), _) => (success, result, None),
            (Self::PendingTools(ids), Generation::V1) => {
                (json!({"type": "success", "pendingToolCallIds": ids}), None, None)
            }
            (Self::PendingTools(ids), Generation::Legacy) => {
                (success, None, Some(json!({"pendingToolCallIds": ids})))
            }
            (Self::Interrupt(interrupts), _) => {
                (json!({"type": "interrupt", "interrupts": interrupts}), None, None)
            }
            (Self::Cancelled, Generation::V1) => (json!({"type": "cancelled"}), None, None),
            (Self::Cancelled, Generation::Legacy) => (success, None, Some(json!({"outcome": "cancelled"}))),
        }
    }
}

/// Turns one stream's chunks into events.
pub(super) struct Events {
    thread_id: String,
    run_id: RunId,
    generation: Generation,
    /// The text message open now.
    text: Option<String>,
    /// The assistant message of the step under way: its text's, or made
    /// for its first tool call; its tool calls name it as their parent.
    assistant: Option<String>,
    /// Steps opened in this stream and not yet finished.
    steps: Vec<u32>,
    /// The step a resumed stream continues, until its first event opens it.
    resumes: Option<u32>,
    /// Calls suspended on since the last step began.
    pending: Vec<PendingCall>,
    expires_at: Option<Timestamp>,
    failure: Option<RunFailure>,
    /// The tokens this stream's steps used.
    usage: Usage,
}

fn millis(at: Timestamp) -> i64 {
    at.0 / 1000
}

fn step_name(step: u32) -> String {
    format!("step {step}")
}

impl Events {
    pub(super) fn new(thread_id: String, run_id: RunId, generation: Generation) -> Self {
        Self {
            thread_id,
            run_id,
            generation,
            text: None,
            assistant: None,
            steps: Vec::new(),
            resumes: None,
            pending: Vec::new(),
            expires_at: None,
            failure: None,
            usage: Usage::default(),
        }
    }

    /// A stream that resumes a run suspended in step `step`: what comes
    /// before its next step (the answered calls' results) is in `step`.
    pub(super) fn resuming(mut self, step: u32) -> Self {
        self.resumes = (step > 0).then_some(step);
        self
    }

    pub(super) fn thread_id(&self) -> &str {
        &self.thread_id
    }

    pub(super) fn run_id(&self) -> RunId {
        self.run_id
    }

    pub(super) fn event(kind: &str, at: Timestamp, mut fields: Value) -> Value {
        fields["type"] = json!(kind);
        fields["timestamp"] = json!(millis(at));
        fields
    }

    fn close_text(&mut self, at: Timestamp, out: &mut Vec<Value>) {
        if let Some(id) = self.text.take() {
            out.push(Self::event("TEXT_MESSAGE_END", at, json!({"messageId": id})));
        }
    }

    fn close_steps(&mut self, at: Timestamp, out: &mut Vec<Value>) {
        for step in std::mem::take(&mut self.steps) {
            out.push(Self::event(
                "STEP_FINISHED",
                at,
                json!({"stepName": step_name(step)}),
            ));
        }
    }

    /// Opens the step a resumed stream continues, before its first event.
    fn open_resumed_step(&mut self, at: Timestamp, out: &mut Vec<Value>) {
        if let Some(step) = self.resumes.take() {
            if self.steps.is_empty() {
                self.steps.push(step);
                out.push(Self::event(
                    "STEP_STARTED",
                    at,
                    json!({"stepName": step_name(step)}),
                ));
            }
        }
    }

    /// Closes everything open before the run's last event.
    fn close_all(&mut self, at: Timestamp, out: &mut Vec<Value>) {
        self.close_text(at, out);
        self.close_steps(at, out);
    }

    /// `RUN_FINISHED` with `outcome`, shaped for the client's generation,
    /// and the tokens `usage`.
    pub(super) fn run_finished(&self, at: Timestamp, outcome: Outcome, usage: Usage) -> Value {
        let (outcome, result, agentd) = outcome.shape(self.generation);
        let mut event = Self::event(
            "RUN_FINISHED",
            at,
            json!({
                "threadId": self.thread_id,
                "runId": self.run_id.to_string(),
                "outcome": outcome,
                "usage": [{
                    "inputTokens": usage.input_tokens,
                    "outputTokens": usage.output_tokens,
                    "totalTokens": usage.input_tokens + usage.output_tokens,
                }],
            }),
        );
        if let Some(result) = result {
            event["result"] = json!(result);
        }
        if let Some(agentd) = agentd {
            event["metadata"] = json!({"agentd": agentd});
        }
        event
    }

    /// The events of `event`; a suspension that ends the stream is handed
    /// back for the caller to finish with [`Events::run_finished`].
    pub(super) fn of(&mut self, event: &Event) -> (Vec<Value>, Option<Suspension>) {
        let at = event.time;
        let mut out = Vec::new();
        match &event.chunk {
            Chunk::Start { agent_id, resumed } => {
                if !resumed {
                    self.resumes = None;
                }
                out.push(Self::event(
                    "RUN_STARTED",
                    at,
                    json!({
                        "threadId": self.thread_id,
                        "runId": self.run_id.to_string(),
                        "metadata": {"agentd": {"agentId": agent_id, "resumed": resumed}},
                    }),
                ));
            }
            Chunk::StepStart { step } => {
                self.close_text(at, &mut out);
                self.resumes = None;
                self.assistant = None;
                self.pending.clear();
                if !self.steps.contains(step) {
                    // Only a resumed stream's continued step can be open.
                    self.close_steps(at, &mut out);
                    self.steps.push(*step);
                    out.push(Self::event(
                        "STEP_STARTED",
                        at,
                        json!({"stepName": step_name(*step)}),
                    ));
                }
            }
            Chunk::TextDelta { text } if text.is_empty() => {}
            Chunk::TextDelta { text } => {
                self.open_resumed_step(at, &mut out);
                let id = match &self.text {
                    Some(id) => id.clone(),
                    None => {
                        let id = format!("{}-{}", self.run_id, event.seq);
                        out.push(Self::event(
                            "TEXT_MESSAGE_START",
                            at,
                            json!({"messageId": id, "role": "assistant"}),
                        ));
                        self.text = Some(id.clone());
                        self.assistant.get_or_insert(id.clone());
                        id
                    }
                };
                out.push(Self::event(
                    "TEXT_MESSAGE_CONTENT",
                    at,
                    json!({"messageId": id, "delta": text}),
                ));
            }
            Chunk::ToolCall { call, .. } => {
                self.open_resumed_step(at, &mut out);
                self.close_text(at, &mut out);
                let parent = self
                    .assistant
                    .get_or_insert_with(|| format!("{}-{}", self.run_id, event.seq))
                    .clone();
                out.push(Self::event(
                    "TOOL_CALL_START",
                    at,
                    json!({"toolCallId": call.id, "toolCallName": call.name, "parentMessageId": parent}),
                ));
                out.push(Self::event(
                    "TOOL_CALL_ARGS",
                    at,
                    json!({"toolCallId": call.id, "delta": call.args.json().get()}),
                ));
                out.push(Self::event("TOOL_CALL_END", at, json!({"toolCallId": call.id})));
            }
            Chunk::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                self.open_resumed_step(at, &mut out);
                self.close_text(at, &mut out);
                out.push(Self::event(
                    "TOOL_CALL_RESULT",
                    at,
                    json!({
                        "messageId": result_message_id(self.run_id, tool_call_id),
                        "toolCallId": tool_call_id,
                        "content": content,
                        "role": "tool",
                    }),
                ));
            }
            Chunk::ToolCallSuspended {
                call,
                payload,
                expires_at,
            } => {
                self.pending.push(PendingCall {
                    call: call.clone(),
                    waiting: Waiting::Suspended {
                        payload: payload.clone(),
                    },
                    since: None,
                });
                self.expires_at = (*expires_at).or(self.expires_at);
            }
            Chunk::ToolCallApproval { call } => self.pending.push(PendingCall {
                call: call.clone(),
                waiting: Waiting::Approval,
                since: None,
            }),
            Chunk::StepFinish { step, usage } => {
                self.close_text(at, &mut out);
                self.usage += *usage;
                if let Some(position) = self.steps.iter().position(|open| open == step) {
                    self.steps.remove(position);
                    out.push(Self::event(
                        "STEP_FINISHED",
                        at,
                        json!({"stepName": step_name(*step)}),
                    ));
                }
            }
            Chunk::Error(failure) => self.failure = Some(failure.clone()),
            Chunk::Finish { reason, text, .. } => {
                self.close_all(at, &mut out);
                let usage = self.usage;
                match reason {
                    FinishReason::Stop | FinishReason::MaxSteps => {
                        out.push(self.run_finished(at, Outcome::Success(Some(text.clone())), usage));
                    }
                    FinishReason::Cancelled => {
                        out.push(self.run_finished(at, Outcome::Cancelled, usage));
                    }
                    FinishReason::Error => {
                        let failure = self.failure.take().unwrap_or_else(|| RunFailure {
                            code: "error".to_owned(),
                            message: "the run failed".to_owned(),
                        });
                        out.push(Self::event(
                            "RUN_ERROR",
                            at,
                            json!({"message": failure.message, "code": failure.code}),
                        ));
                    }
                    FinishReason::Suspended => {
                        let suspension = Suspension {
                            pending: std::mem::take(&mut self.pending),
                            expires_at: self.expires_at,
                            usage,
                        };
                        return (out, Some(suspension));
                    }
                }
            }
        }
        (out, None)
    }
}

/// The message id of a call's result in run `run_id`: the same in the
/// stream and in a replay's snapshot.
pub(super) fn result_message_id(run_id: RunId, tool_call_id: &str) -> String {
    format!("{run_id}-result-{tool_call_id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Args, ToolCall};

    fn event(seq: u64, chunk: Chunk) -> Event {
        Event {
            seq,
            time: Timestamp(5_000),
            chunk,
        }
    }

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn text_and_a_tool_call_close_what_they_open() {
        let mut events = Events::new("t".into(), RunId::new(), Generation::V1);
        let mut out = Vec::new();
        let chunks = [
            Chunk::Start {
                agent_id: "a".into(),
                resumed: false,
            },
            Chunk::StepStart { step: 1 },
            Chunk::TextDelta { text: "Hi".into() },
            Chunk::ToolCall {
                call: ToolCall {
                    id: "c".into(),
                    name: "x".into(),
                    args: Args::from(json!({"a": 1})),
                },
                original_args: None,
            },
            Chunk::Finish {
                reason: FinishReason::Stop,
                usage: Usage::default(),
                text: "Hi".into(),
            },
        ];
        for (seq, chunk) in chunks.into_iter().enumerate() {
            out.extend(events.of(&event(seq as u64 + 1, chunk)).0);
        }
        assert_eq!(
            types(&out),
            [
                "RUN_STARTED",
                "STEP_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "STEP_FINISHED",
                "RUN_FINISHED",
            ]
        );
        assert_eq!(out[5]["parentMessageId"], out[2]["messageId"]);
        assert_eq!(out[6]["delta"], r#"{"a":1}"#);
        assert_eq!(out[9]["outcome"]["type"], "success");
        assert_eq!(out[9]["timestamp"], 5);
    }

    #[test]
    fn a_step_not_opened_here_is_not_finished_here() {
        let mut events = Events::new("t".into(), RunId::new(), Generation::V1);
        let (out, _) = events.of(&event(
            9,
            Chunk::StepFinish {
                step: 1,
                usage: Usage::default(),
            },
        ));
        assert!(out.is_empty());
    }

    fn call(id: &str) -> Chunk {
        Chunk::ToolCall {
            call: ToolCall {
                id: id.into(),
                name: "x".into(),
                args: Args::from(json!({})),
            },
            original_args: None,
        }
    }

    fn step_finish(step: u32, tokens: u64) -> Chunk {
        Chunk::StepFinish {
            step,
            usage: Usage {
                input_tokens: tokens,
                output_tokens: 1,
            },
        }
    }

    #[test]
    fn a_steps_tool_calls_share_its_assistant_message() {
        let mut events = Events::new("t".into(), RunId::new(), Generation::V1);
        let mut out = Vec::new();
        for (seq, chunk) in [Chunk::StepStart { step: 1 }, call("a"), call("b")]
            .into_iter()
            .enumerate()
        {
            out.extend(events.of(&event(seq as u64 + 1, chunk)).0);
        }
        let parents: Vec<&Value> = out
            .iter()
            .filter(|e| e["type"] == "TOOL_CALL_START")
            .map(|e| &e["parentMessageId"])
            .collect();
        assert_eq!(parents.len(), 2);
        assert!(parents[0].is_string());
        assert_eq!(parents[0], parents[1]);
    }

    #[test]
    fn a_resumed_stream_puts_its_results_in_the_step_it_continues_and_counts_its_own_usage() {
        let mut events = Events::new("t".into(), RunId::new(), Generation::V1).resuming(1);
        let chunks = [
            Chunk::Start {
                agent_id: "a".into(),
                resumed: true,
            },
            Chunk::ToolResult {
                tool_call_id: "c".into(),
                tool_name: "ask_user".into(),
                content: "User answered: x".into(),
                is_error: false,
            },
            Chunk::StepStart { step: 2 },
            step_finish(2, 7),
            Chunk::Finish {
                reason: FinishReason::Stop,
                usage: Usage {
                    input_tokens: 100,
                    output_tokens: 100,
                },
                text: "done".into(),
            },
        ];
        let mut out = Vec::new();
        for (seq, chunk) in chunks.into_iter().enumerate() {
            out.extend(events.of(&event(seq as u64 + 10, chunk)).0);
        }
        assert_eq!(
            types(&out),
            [
                "RUN_STARTED",
                "STEP_STARTED",
                "TOOL_CALL_RESULT",
                "STEP_FINISHED",
                "STEP_STARTED",
                "STEP_FINISHED",
                "RUN_FINISHED",
            ]
        );
        assert_eq!(out[1]["stepName"], "step 1");
        assert_eq!(out[3]["stepName"], "step 1");
        assert_eq!(out[4]["stepName"], "step 2");
        assert_eq!(out[6]["usage"][0]["inputTokens"], 7, "this stream's steps only");
        assert_eq!(out[6]["usage"][0]["totalTokens"], 8);
    }

    #[test]
    fn outcomes_take_the_shapes_of_the_clients_generation() {
        let finished = |generation, outcome| {
            Events::new("t".into(), RunId::new(), generation).run_finished(
                Timestamp(0),
                outcome,
                Usage::default(),
            )
        };
        let pending = Outcome::PendingTools(vec!["c".into()]);
        let v1 = finished(Generation::V1, pending.clone());
        assert_eq!(
            v1["outcome"],
            json!({"type": "success", "pendingToolCallIds": ["c"]})
        );
        assert!(v1.get("metadata").is_none());
        let legacy = finished(Generation::Legacy, pending);
        assert_eq!(legacy["outcome"], json!({"type": "success"}));
        assert_eq!(legacy["metadata"]["agentd"]["pendingToolCallIds"], json!(["c"]));
        assert_eq!(
            finished(Generation::V1, Outcome::Cancelled)["outcome"],
            json!({"type": "cancelled"})
        );
        let cancelled = finished(Generation::Legacy, Outcome::Cancelled);
        assert_eq!(cancelled["outcome"], json!({"type": "success"}));
        assert_eq!(cancelled["metadata"]["agentd"]["outcome"], "cancelled");
        let done = finished(Generation::Legacy, Outcome::Success(Some("hi".into())));
        assert_eq!(done["result"], "hi");
    }
}
