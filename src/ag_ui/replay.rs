//! A request for a thread that brings nothing new (no new user message, no
//! resume entries, no frontend tool results): a reloaded page coming back.
//! The thread is replayed, not run: `RUN_STARTED` with the latest run's id,
//! `MESSAGES_SNAPSHOT` with the thread's conversation, then the end of the
//! latest run as it stands: its open interrupts (or frontend tool calls)
//! when it waits, `success` with its final text when it completed,
//! `cancelled` when it was cancelled or expired, `RUN_ERROR` when it
//! failed. A replay uses no tokens and changes nothing.

use serde_json::{json, Value};

use super::events::{result_message_id, Events, Outcome};
use super::stream::waiting_outcome;
use crate::domain::{Message, Phase, RunRecord, Timestamp, Usage};
use crate::runtime::Runtime;

/// A tool call as an AG-UI `ToolCall`.
fn tool_call(call: &crate::domain::ToolCall) -> Value {
    json!({
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.args.json().get()},
    })
}

/// The thread's conversation, run by run, as AG-UI messages. A message's
/// id is its run's and its place in the run (a tool result's is the one
/// its `TOOL_CALL_RESULT` had), so two replays name it alike.
pub(super) fn messages(runs: &[RunRecord]) -> Vec<Value> {
    let mut out = Vec::new();
    for run in runs {
        for (index, message) in run.state.messages.iter().enumerate() {
            let id = format!("{}-m{index}", run.id);
            out.push(match message {
                Message::System { content } => json!({"id": id, "role": "system", "content": content}),
                Message::User { content } => json!({"id": id, "role": "user", "content": content}),
                Message::Assistant { content, tool_calls } => {
                    let mut message = json!({"id": id, "role": "assistant"});
                    if !content.is_empty() {
                        message["content"] = json!(content);
                    }
                    if !tool_calls.is_empty() {
                        message["toolCalls"] = tool_calls.iter().map(tool_call).collect();
                    }
                    message
                }
                Message::Tool {
                    tool_call_id,
                    content,
                    is_error,
                    ..
                } => {
                    let mut message = json!({
                        "id": result_message_id(run.id, tool_call_id),
                        "role": "tool",
                        "toolCallId": tool_call_id,
                        "content": content,
                    });
                    if *is_error {
                        message["error"] = json!(content);
                    }
                    message
                }
            });
        }
    }
    out
}

/// The replay of a thread whose runs are `runs` (the latest last), with
/// `events` made for the latest; none while the latest is running.
pub(super) fn events(runtime: &Runtime, events: &Events, runs: &[RunRecord]) -> Option<Vec<Value>> {
    let at = Timestamp::now();
    let latest = runs.last()?;
    let started = Events::event(
        "RUN_STARTED",
        at,
        json!({
            "threadId": events.thread_id(),
            "runId": latest.id.to_string(),
            "metadata": {"agentd": {"agentId": latest.agent_id, "resumed": false, "replay": true}},
        }),
    );
    let snapshot = Events::event("MESSAGES_SNAPSHOT", at, json!({"messages": messages(runs)}));
    let outcome = match latest.phase() {
        Phase::Suspended {
            pending, expires_at, ..
        } => {
            let agent = runtime.agents().get(&latest.agent_id).cloned();
            waiting_outcome(pending, agent.as_deref(), Some(*expires_at))
        }
        Phase::Completed { final_text } => Outcome::Success(Some(final_text.clone())),
        Phase::Cancelled { .. } | Phase::Expired => Outcome::Cancelled,
        Phase::Running { .. } => return None,
        Phase::Failed { failure } => {
            let failed = Events::event(
                "RUN_ERROR",
                at,
                json!({"message": failure.message, "code": failure.code}),
            );
            return Some(vec![started, snapshot, failed]);
        }
    };
    let finished = events.run_finished(at, outcome, Usage::default());
    Some(vec![started, snapshot, finished])
}
