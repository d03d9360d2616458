//! The AG-UI protobuf encoding (`application/vnd.ag-ui.event+proto`), for
//! a client whose `Accept` asks for it: each event as an `ag_ui.Event`
//! message (its `oneof` arm, with a `BaseEvent` carrying the type, the
//! timestamp and the metadata), prefixed by its length as four big-endian
//! bytes, as `@ag-ui/proto` 1.0 (MIT) frames and numbers them. Only the
//! events agentd sends are declared. Built from the JSON events
//! `events.rs` makes, so that both encodings say the same.

use axum::body::Bytes;
use prost::Message;
use serde_json::Value;

use crate::grpc::convert::{json_to_struct, json_to_value};

/// The media type, exactly as the official client matches it.
pub(super) const MEDIA_TYPE: &str = "application/vnd.ag-ui.event+proto";

#[derive(Clone, PartialEq, Message)]
struct BaseEvent {
    #[prost(int32, tag = "1")]
    r#type: i32,
    #[prost(int64, optional, tag = "2")]
    timestamp: Option<i64>,
    #[prost(message, optional, tag = "4")]
    metadata: Option<prost_types::Struct>,
}

/// The fields of the events agentd sends, in one message: each event
/// uses the tags of its own message, which do not clash within it.
#[derive(Clone, PartialEq, Message)]
struct Fields {
    #[prost(message, optional, tag = "1")]
    base: Option<BaseEvent>,
    #[prost(string, optional, tag = "2")]
    f2: Option<String>,
    #[prost(string, optional, tag = "3")]
    f3: Option<String>,
    #[prost(string, optional, tag = "4")]
    f4: Option<String>,
    #[prost(string, optional, tag = "5")]
    f5: Option<String>,
    #[prost(string, optional, tag = "6")]
    f6: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct Interrupt {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(string, tag = "2")]
    reason: String,
    #[prost(string, optional, tag = "3")]
    message: Option<String>,
    #[prost(string, optional, tag = "4")]
    tool_call_id: Option<String>,
    #[prost(message, optional, tag = "5")]
    response_schema: Option<prost_types::Value>,
    #[prost(string, optional, tag = "6")]
    expires_at: Option<String>,
    #[prost(message, optional, tag = "7")]
    metadata: Option<prost_types::Value>,
}

#[derive(Clone, PartialEq, Message)]
struct Usage {
    #[prost(int64, optional, tag = "3")]
    input_tokens: Option<i64>,
    #[prost(int64, optional, tag = "4")]
    output_tokens: Option<i64>,
    #[prost(int64, optional, tag = "5")]
    total_tokens: Option<i64>,
}

#[derive(Clone, PartialEq, Message)]
struct RunFinished {
    #[prost(message, optional, tag = "1")]
    base: Option<BaseEvent>,
    #[prost(string, tag = "2")]
    thread_id: String,
    #[prost(string, tag = "3")]
    run_id: String,
    #[prost(message, optional, tag = "4")]
    result: Option<prost_types::Value>,
    #[prost(string, tag = "5")]
    outcome: String,
    #[prost(message, repeated, tag = "6")]
    interrupts: Vec<Interrupt>,
    #[prost(message, repeated, tag = "7")]
    usage: Vec<Usage>,
    #[prost(string, repeated, tag = "8")]
    pending_tool_call_ids: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct FunctionCall {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    arguments: String,
}

#[derive(Clone, PartialEq, Message)]
struct ToolCall {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(string, tag = "2")]
    r#type: String,
    #[prost(message, optional, tag = "3")]
    function: Option<FunctionCall>,
}

/// A message of a snapshot, as far as agentd's messages fill it.
#[derive(Clone, PartialEq, Message)]
struct SnapshotMessage {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(string, tag = "2")]
    role: String,
    #[prost(string, optional, tag = "3")]
    content: Option<String>,
    #[prost(message, repeated, tag = "5")]
    tool_calls: Vec<ToolCall>,
    #[prost(string, optional, tag = "6")]
    tool_call_id: Option<String>,
    #[prost(string, optional, tag = "7")]
    error: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct MessagesSnapshot {
    #[prost(message, optional, tag = "1")]
    base: Option<BaseEvent>,
    #[prost(message, repeated, tag = "2")]
    messages: Vec<SnapshotMessage>,
}

/// An event's `EventType` number and its arm of `Event`'s `oneof`.
fn numbers(kind: &str) -> Option<(i32, u32)> {
    Some(match kind {
        "TEXT_MESSAGE_START" => (0, 1),
        "TEXT_MESSAGE_CONTENT" => (1, 2),
        "TEXT_MESSAGE_END" => (2, 3),
        "TOOL_CALL_START" => (3, 4),
        "TOOL_CALL_ARGS" => (4, 5),
        "TOOL_CALL_END" => (5, 6),
        "MESSAGES_SNAPSHOT" => (8, 9),
        "RUN_STARTED" => (11, 12),
        "RUN_FINISHED" => (12, 13),
        "RUN_ERROR" => (13, 14),
        "STEP_STARTED" => (14, 15),
        "STEP_FINISHED" => (15, 16),
        "TOOL_CALL_RESULT" => (21, 22),
        _ => return None,
    })
}

fn text(event: &Value, key: &str) -> Option<String> {
    event.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn usage(event: &Value) -> Vec<Usage> {
    let Some(Value::Array(entries)) = event.get("usage") else {
        return Vec::new();
    };
    let count = |entry: &Value, key| entry.get(key).and_then(Value::as_i64);
    entries
        .iter()
        .map(|entry| Usage {
            input_tokens: count(entry, "inputTokens"),
            output_tokens: count(entry, "outputTokens"),
            total_tokens: count(entry, "totalTokens"),
        })
        .collect()
}

fn run_finished(base: BaseEvent, event: &Value) -> RunFinished {
    let outcome = &event["outcome"];
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let interrupts = outcome["interrupts"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|interrupt| Interrupt {
                    id: text(interrupt, "id").unwrap_or_default(),
                    reason: text(interrupt, "reason").unwrap_or_default(),
                    message: text(interrupt, "message"),
                    tool_call_id: text(interrupt, "toolCallId"),
                    response_schema: interrupt.get("responseSchema").map(json_to_value),
                    expires_at: text(interrupt, "expiresAt"),
                    metadata: interrupt.get("metadata").map(json_to_value),
                })
                .collect()
        })
        .unwrap_or_default();
    RunFinished {
        base: Some(base),
        thread_id: text(event, "threadId").unwrap_or_default(),
        run_id: text(event, "runId").unwrap_or_default(),
        result: event.get("result").map(json_to_value),
        outcome: text(outcome, "type").unwrap_or_default(),
        interrupts,
        usage: usage(event),
        pending_tool_call_ids: strings(&outcome["pendingToolCallIds"]),
    }
}

fn messages_snapshot(base: BaseEvent, event: &Value) -> MessagesSnapshot {
    let messages = event["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let messages = messages
        .iter()
        .map(|message| SnapshotMessage {
            id: text(message, "id").unwrap_or_default(),
            role: text(message, "role").unwrap_or_default(),
            content: text(message, "content"),
            tool_calls: message["toolCalls"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|call| ToolCall {
                    id: text(call, "id").unwrap_or_default(),
                    r#type: text(call, "type").unwrap_or_default(),
                    function: Some(FunctionCall {
                        name: text(&call["function"], "name").unwrap_or_default(),
                        arguments: text(&call["function"], "arguments").unwrap_or_default(),
                    }),
                })
                .collect(),
            tool_call_id: text(message, "toolCallId"),
            error: text(message, "error"),
        })
        .collect();
    MessagesSnapshot {
        base: Some(base),
        messages,
    }
}

/// The fields of an event other than RUN_FINISHED, by its message's tags.
fn fields(base: BaseEvent, kind: &str, event: &Value) -> Fields {
    let keys: [&str; 5] = match kind {
        "TEXT_MESSAGE_START" => ["messageId", "role", "", "", ""],
        "TEXT_MESSAGE_CONTENT" => ["messageId", "delta", "", "", ""],
        "TEXT_MESSAGE_END" => ["messageId", "", "", "", ""],
        "TOOL_CALL_START" => ["toolCallId", "toolCallName", "parentMessageId", "", ""],
        "TOOL_CALL_ARGS" => ["toolCallId", "delta", "", "", ""],
        "TOOL_CALL_END" => ["toolCallId", "", "", "", ""],
        "RUN_STARTED" => ["threadId", "runId", "", "", ""],
        "RUN_ERROR" => ["code", "message", "", "", ""],
        "STEP_STARTED" | "STEP_FINISHED" => ["stepName", "", "", "", ""],
        "TOOL_CALL_RESULT" => ["", "messageId", "toolCallId", "content", "role"],
        _ => ["", "", "", "", ""],
    };
    let field = |index: usize| {
        (!keys[index].is_empty())
            .then(|| text(event, keys[index]))
            .flatten()
    };
    Fields {
        base: Some(base),
        f2: field(0),
        f3: field(1),
        f4: field(2),
        f5: field(3),
        f6: field(4),
    }
}

/// `event` (one of `events.rs`'s) as a length-prefixed `Event` message.
pub(super) fn encode(event: &Value) -> Bytes {
    let kind = event["type"].as_str().unwrap_or_default();
    let Some((number, arm)) = numbers(kind) else {
        return Bytes::new();
    };
    let base = BaseEvent {
        r#type: number,
        timestamp: event.get("timestamp").and_then(Value::as_i64),
        metadata: event.get("metadata").map(json_to_struct),
    };
    let inner = match kind {
        "RUN_FINISHED" => run_finished(base, event).encode_to_vec(),
        "MESSAGES_SNAPSHOT" => messages_snapshot(base, event).encode_to_vec(),
        _ => fields(base, kind, event).encode_to_vec(),
    };
    // The `Event` envelope: its one arm, a length-delimited field.
    let mut envelope = Vec::with_capacity(inner.len() + 8);
    prost::encoding::encode_key(arm, prost::encoding::WireType::LengthDelimited, &mut envelope);
    prost::encoding::encode_varint(inner.len() as u64, &mut envelope);
    envelope.extend_from_slice(&inner);
    let mut framed = Vec::with_capacity(envelope.len() + 4);
    framed.extend_from_slice(&u32::try_from(envelope.len()).unwrap_or(u32::MAX).to_be_bytes());
    framed.extend_from_slice(&envelope);
    Bytes::from(framed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_event_is_framed_by_its_length() {
        let bytes = encode(&json!({"type": "STEP_STARTED", "timestamp": 5, "stepName": "step 1"}));
        let length = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(length, bytes.len() - 4);
        // Arm 15 (STEP_STARTED), length-delimited: key 15 << 3 | 2.
        assert_eq!(bytes[4], 15 << 3 | 2);
        let inner = Fields::decode(&bytes[6..]).unwrap();
        assert_eq!(inner.f2.as_deref(), Some("step 1"));
        assert_eq!(inner.base.unwrap().r#type, 14);
    }
}
