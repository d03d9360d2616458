//! A run's chunks as AG-UI events, in an order the official client's
//! verification accepts: `RUN_STARTED`, steps (`step N`), text messages
//! opened before their first delta and closed before anything else, tool
//! calls as start/args/end, results, and one `RUN_FINISHED` (outcome
//! `success`, `interrupt` or `cancelled`) or `RUN_ERROR` to end. Every
//! step and message this stream opened is closed before the end; a step a
//! resumed stream did not open is not finished in it.

use serde_json::{json, Value};

use crate::domain::{Chunk, Event, FinishReason, PendingCall, RunFailure, RunId, Timestamp, Usage, Waiting};

/// How a stream ended, when it ended suspended: the calls it waits on.
#[derive(Debug)]
pub struct Suspension {
    pub pending: Vec<PendingCall>,
    /// The latest `expires_at` of a suspended call in this stream.
    pub expires_at: Option<Timestamp>,
    pub usage: Usage,
}

/// Turns one stream's chunks into events.
pub struct Events {
    thread_id: String,
    run_id: RunId,
    /// The text message open now.
    text: Option<String>,
    /// Steps opened in this stream and not yet finished.
    steps: Vec<u32>,
    /// Calls suspended on since the last step began.
    pending: Vec<PendingCall>,
    expires_at: Option<Timestamp>,
    failure: Option<RunFailure>,
}

fn millis(at: Timestamp) -> i64 {
    at.0 / 1000
}

impl Events {
    pub fn new(thread_id: String, run_id: RunId) -> Self {
        Self {
            thread_id,
            run_id,
            text: None,
            steps: Vec::new(),
            pending: Vec::new(),
            expires_at: None,
            failure: None,
        }
    }

    fn event(kind: &str, at: Timestamp, mut fields: Value) -> Value {
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
                json!({"stepName": format!("step {step}")}),
            ));
        }
    }

    /// Closes everything open before the run's last event.
    fn close_all(&mut self, at: Timestamp, out: &mut Vec<Value>) {
        self.close_text(at, out);
        self.close_steps(at, out);
    }

    /// `RUN_FINISHED` with `outcome` (and `result` when there is one).
    pub fn run_finished(&self, at: Timestamp, outcome: Value, result: Option<&str>, usage: Usage) -> Value {
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
        event
    }

    /// The events of `event`; a suspension that ends the stream is handed
    /// back for the caller to finish with [`Events::run_finished`].
    pub fn of(&mut self, event: &Event) -> (Vec<Value>, Option<Suspension>) {
        let at = event.time;
        let mut out = Vec::new();
        match &event.chunk {
            Chunk::Start { agent_id, resumed } => out.push(Self::event(
                "RUN_STARTED",
                at,
                json!({
                    "threadId": self.thread_id,
                    "runId": self.run_id.to_string(),
                    "metadata": {"agentd": {"agentId": agent_id, "resumed": resumed}},
                }),
            )),
            Chunk::StepStart { step } => {
                self.close_text(at, &mut out);
                self.pending.clear();
                if !self.steps.contains(step) {
                    self.steps.push(*step);
                    out.push(Self::event(
                        "STEP_STARTED",
                        at,
                        json!({"stepName": format!("step {step}")}),
                    ));
                }
            }
            Chunk::TextDelta { text } if text.is_empty() => {}
            Chunk::TextDelta { text } => {
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
                let parent = self.text.clone();
                self.close_text(at, &mut out);
                let mut start = json!({"toolCallId": call.id, "toolCallName": call.name});
                if let Some(parent) = parent {
                    start["parentMessageId"] = json!(parent);
                }
                out.push(Self::event("TOOL_CALL_START", at, start));
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
                self.close_text(at, &mut out);
                out.push(Self::event(
                    "TOOL_CALL_RESULT",
                    at,
                    json!({
                        "messageId": format!("{}-result-{tool_call_id}", self.run_id),
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
            Chunk::StepFinish { step, .. } => {
                self.close_text(at, &mut out);
                if let Some(position) = self.steps.iter().position(|open| open == step) {
                    self.steps.remove(position);
                    out.push(Self::event(
                        "STEP_FINISHED",
                        at,
                        json!({"stepName": format!("step {step}")}),
                    ));
                }
            }
            Chunk::Error(failure) => self.failure = Some(failure.clone()),
            Chunk::Finish { reason, usage, text } => {
                self.close_all(at, &mut out);
                match reason {
                    FinishReason::Stop | FinishReason::MaxSteps => {
                        out.push(self.run_finished(at, json!({"type": "success"}), Some(text), *usage));
                    }
                    FinishReason::Cancelled => {
                        out.push(self.run_finished(at, json!({"type": "cancelled"}), None, *usage));
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
                            usage: *usage,
                        };
                        return (out, Some(suspension));
                    }
                }
            }
        }
        (out, None)
    }
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
        let mut events = Events::new("t".into(), RunId::new());
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
        let mut events = Events::new("t".into(), RunId::new());
        let (out, _) = events.of(&event(
            9,
            Chunk::StepFinish {
                step: 1,
                usage: Usage::default(),
            },
        ));
        assert!(out.is_empty());
    }
}
