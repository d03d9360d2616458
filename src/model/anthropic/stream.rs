//! Reads a Messages event stream: `message_start` (input tokens), content
//! blocks (`content_block_start`, `text_delta` / `input_json_delta` deltas,
//! `content_block_stop`), `message_delta` (stop reason, output tokens) and
//! `message_stop`; `ping` is ignored and `error` fails the step. Text is
//! streamed as it comes; a tool call is given whole when its block stops,
//! or as an [`ModelEvent::InvalidToolCall`] when its JSON does not parse
//! (e.g. cut off by `max_tokens`).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::error::{stream_error, ErrorWire};
use crate::domain::Usage;
use crate::model::http::StreamDecoder;
use crate::model::sse::SseEvent;
use crate::model::{ModelError, ModelEvent, StopReason};

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EventWire {
    MessageStart {
        message: MessageWire,
    },
    ContentBlockStart {
        index: u64,
        content_block: BlockWire,
    },
    ContentBlockDelta {
        index: u64,
        delta: DeltaWire,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<MessageDeltaWire>,
        #[serde(default)]
        usage: Option<UsageWire>,
    },
    MessageStop,
    Error {
        error: ErrorWire,
    },
    /// `ping`, and events added to the API later.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDeltaWire {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct MessageWire {
    #[serde(default)]
    usage: Option<UsageWire>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockWire {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Thinking and other block types: not part of the answer.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DeltaWire {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct UsageWire {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl UsageWire {
    /// Every input token, cached or not.
    fn input(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolCalls,
        "max_tokens" => StopReason::MaxTokens,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

/// A `tool_use` block being assembled.
struct OpenCall {
    id: String,
    name: String,
    /// The input given at the block's start (`{}` when it streams).
    input: Value,
    json: String,
}

/// The decoder of one Messages stream.
pub(crate) struct MessagesDecoder {
    provider: String,
    calls: HashMap<u64, OpenCall>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
}

impl MessagesDecoder {
    pub(crate) fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            calls: HashMap::new(),
            usage: Usage::default(),
            stop: None,
            done: false,
        }
    }

    fn close_call(call: OpenCall) -> ModelEvent {
        let OpenCall {
            id,
            name,
            input,
            json,
        } = call;
        // A call with no input deltas has its input whole in its start.
        ModelEvent::call_from_json(id, name, json, || {
            if input.is_null() {
                Value::Object(serde_json::Map::new())
            } else {
                input
            }
        })
    }
}

impl StreamDecoder for MessagesDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let wire: EventWire = serde_json::from_str(data).map_err(|error| {
            ModelError::invalid_response(format!(
                "{} sent an event that is not a Messages stream event ({error}): {data}",
                self.provider
            ))
        })?;
        match wire {
            EventWire::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage.input_tokens = usage.input().unwrap_or(0);
                    self.usage.output_tokens = usage.output_tokens.unwrap_or(0);
                }
            }
            EventWire::ContentBlockStart { index, content_block } => match content_block {
                BlockWire::Text { text } if !text.is_empty() => out.push(ModelEvent::TextDelta(text)),
                BlockWire::ToolUse { id, name, input } => {
                    self.calls.insert(
                        index,
                        OpenCall {
                            id,
                            name,
                            input,
                            json: String::new(),
                        },
                    );
                }
                BlockWire::Text { .. } | BlockWire::Other => {}
            },
            EventWire::ContentBlockDelta { index, delta } => match delta {
                DeltaWire::TextDelta { text } if !text.is_empty() => out.push(ModelEvent::TextDelta(text)),
                DeltaWire::InputJsonDelta { partial_json } => {
                    let call = self.calls.get_mut(&index).ok_or_else(|| {
                        ModelError::invalid_response(format!(
                            "{} sent input_json_delta for block {index}, which is not a tool_use block",
                            self.provider
                        ))
                    })?;
                    call.json.push_str(&partial_json);
                }
                DeltaWire::TextDelta { .. } | DeltaWire::Other => {}
            },
            EventWire::ContentBlockStop { index } => {
                if let Some(call) = self.calls.remove(&index) {
                    out.push(Self::close_call(call));
                }
            }
            EventWire::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(stop_reason(&reason));
                }
                if let Some(usage) = usage {
                    if let Some(input) = usage.input().filter(|n| *n > 0) {
                        self.usage.input_tokens = input;
                    }
                    if let Some(output) = usage.output_tokens {
                        self.usage.output_tokens = output;
                    }
                }
            }
            EventWire::MessageStop => self.done = true,
            EventWire::Error { error } => return Err(stream_error(&self.provider, &error)),
            EventWire::Other => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if !self.done {
            return Err(ModelError::invalid_response(format!(
                "the stream from {} ended before message_stop",
                self.provider
            )));
        }
        if let Some(stop) = self.stop.take() {
            out.push(ModelEvent::Finish(stop));
        }
        out.push(ModelEvent::Usage(self.usage));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::domain::ToolCall;

    fn decode(data: &[&str]) -> Result<Vec<ModelEvent>, ModelError> {
        crate::model::http::decode_events(MessagesDecoder::new("test"), data)
    }

    #[test]
    fn text_and_tool_use_blocks_in_order_with_usage() {
        let events = decode(&[
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":20,"cache_read_input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me ask."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"ask_user","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"question\": \"Wh"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ich?\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_2","name":"now","input":{}}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("Let me ask.".into()),
                ModelEvent::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "ask_user".into(),
                    args: json!({"question": "Which?"}).into()
                }),
                ModelEvent::ToolCall(ToolCall {
                    id: "toolu_2".into(),
                    name: "now".into(),
                    args: json!({}).into()
                }),
                ModelEvent::Finish(StopReason::ToolCalls),
                ModelEvent::Usage(Usage {
                    input_tokens: 25,
                    output_tokens: 42
                }),
            ]
        );
    }

    #[test]
    fn input_cut_off_by_max_tokens_is_an_invalid_call() {
        let events = decode(&[
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"ask_user","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"question\": \"Wh"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":8}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert!(
            matches!(&events[0], ModelEvent::InvalidToolCall { call, .. } if *call.args == json!("{\"question\": \"Wh")),
            "{events:?}"
        );
    }

    #[test]
    fn error_events_and_truncated_streams_fail() {
        let error =
            decode(&[r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#])
                .unwrap_err();
        assert_eq!(error.code(), "provider_error");
        assert!(error.message.contains("Overloaded"), "{}", error.message);
        let error =
            decode(&[r#"{"type":"message_start","message":{"usage":{"input_tokens":1}}}"#]).unwrap_err();
        assert_eq!(error.code(), "invalid_response");
    }
}
