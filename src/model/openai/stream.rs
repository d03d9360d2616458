//! Reads a Chat Completions event stream: `data:` chunks whose deltas carry
//! text and pieces of tool calls (joined by their `index`), a usage chunk
//! (`stream_options.include_usage`), then `data: [DONE]`. Tool calls are
//! given whole, once the stream is complete; arguments that are not valid
//! JSON become an [`ModelEvent::InvalidToolCall`].

use serde::Deserialize;
use serde_json::Value;

use super::error::stream_error;
use crate::domain::Usage;
use crate::model::http::StreamDecoder;
use crate::model::sse::SseEvent;
use crate::model::{ModelError, ModelEvent, StopReason};

#[derive(Deserialize)]
struct ChunkWire {
    #[serde(default)]
    choices: Option<Vec<ChoiceWire>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChoiceWire {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<DeltaWire>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct DeltaWire {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallWire>>,
}

#[derive(Deserialize)]
struct ToolCallWire {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionWire>,
}

#[derive(Deserialize)]
struct FunctionWire {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct UsageWire {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// A tool call being assembled from deltas.
#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// The decoder of one Chat Completions stream.
pub(crate) struct ChatDecoder {
    provider: String,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    /// Why the first choice finished, once it said.
    stop: Option<StopReason>,
    /// `[DONE]` arrived.
    done: bool,
}

impl ChatDecoder {
    pub(crate) fn new(provider: &str) -> Self {
        Self {
            provider: provider.to_owned(),
            calls: Vec::new(),
            usage: None,
            stop: None,
            done: false,
        }
    }

    fn merge(&mut self, delta: ToolCallWire) {
        let slot = match delta.index {
            Some(index) => self.calls.iter().position(|c| c.index == Some(index)),
            // Servers that leave out `index` start a call with a new id.
            None => match (&delta.id, self.calls.last()) {
                (Some(id), Some(last)) if !id.is_empty() && *id != last.id => None,
                (_, Some(_)) => Some(self.calls.len() - 1),
                (_, None) => None,
            },
        };
        let call = match slot {
            Some(i) => &mut self.calls[i],
            None => {
                self.calls.push(PartialCall {
                    index: delta.index,
                    ..PartialCall::default()
                });
                self.calls.last_mut().expect("just pushed")
            }
        };
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = delta.function {
            // The name comes whole in one delta, or (some servers) again
            // in every delta, or (rarely) in pieces.
            if let Some(name) = function.name.filter(|n| !n.is_empty() && *n != call.name) {
                call.name.push_str(&name);
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolCalls,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_owned()),
    }
}

/// A complete call, or the reason its arguments cannot be read.
fn finish_call(call: PartialCall) -> ModelEvent {
    let id = if call.id.is_empty() {
        format!("call_{}", uuid::Uuid::now_v7().simple())
    } else {
        call.id
    };
    ModelEvent::call_from_json(id, call.name, call.arguments, || {
        Value::Object(serde_json::Map::new())
    })
}

impl StreamDecoder for ChatDecoder {
    fn event(&mut self, event: SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: ChunkWire = serde_json::from_str(data).map_err(|error| {
            ModelError::invalid_response(format!(
                "{} sent a chunk that is not a chat completion chunk ({error}): {data}",
                self.provider
            ))
        })?;
        if let Some(error) = chunk.error {
            return Err(stream_error(&self.provider, &error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            });
        }
        // Only the first choice is read: agents never ask for several.
        for choice in chunk.choices.into_iter().flatten().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    out.push(ModelEvent::TextDelta(text));
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.merge(call);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.stop = Some(stop_reason(&reason));
            }
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if !self.done && self.stop.is_none() {
            return Err(ModelError::invalid_response(format!(
                "the stream from {} ended before the answer was complete (no finish_reason, no [DONE])",
                self.provider
            )));
        }
        for call in std::mem::take(&mut self.calls) {
            if call.name.is_empty() {
                return Err(ModelError::invalid_response(format!(
                    "{} sent a tool call without a function name",
                    self.provider
                )));
            }
            out.push(finish_call(call));
        }
        if let Some(stop) = self.stop.take() {
            out.push(ModelEvent::Finish(stop));
        }
        if let Some(usage) = self.usage.take() {
            out.push(ModelEvent::Usage(usage));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::domain::ToolCall;

    fn decode(data: &[&str]) -> Result<Vec<ModelEvent>, ModelError> {
        crate::model::http::decode_events(ChatDecoder::new("test"), data)
    }

    #[test]
    fn parallel_calls_are_assembled_by_index() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"ask_user","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"lookup","arguments":"{\"q\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"question\":"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Hi?\"}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(
            events,
            [
                ModelEvent::ToolCall(ToolCall {
                    id: "call_a".into(),
                    name: "ask_user".into(),
                    args: json!({"question": "Hi?"}).into()
                }),
                ModelEvent::ToolCall(ToolCall {
                    id: "call_b".into(),
                    name: "lookup".into(),
                    args: json!({"q": 1}).into()
                }),
                ModelEvent::Finish(StopReason::ToolCalls),
                ModelEvent::Usage(Usage {
                    input_tokens: 12,
                    output_tokens: 7
                }),
            ]
        );
    }

    #[test]
    fn calls_without_index_are_split_by_id_and_names_are_not_doubled() {
        let events = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"y","arguments":""}}]},"finish_reason":"tool_calls"}]}"#,
        ])
        .unwrap();
        let names: Vec<(String, String)> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCall(c) => Some((c.id.clone(), c.name.clone())),
                ModelEvent::Finish(_) => None,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(names, [("a".into(), "x".into()), ("b".into(), "y".into())]);
    }

    #[test]
    fn invalid_arguments_are_reported_with_the_raw_text() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"ask_user","arguments":"{\"question\": \"Wh"}}]},"finish_reason":"length"}]}"#,
            "[DONE]",
        ])
        .unwrap();
        let [ModelEvent::InvalidToolCall { call, error }, ModelEvent::Finish(StopReason::MaxTokens)] =
            events.as_slice()
        else {
            panic!("{events:?}");
        };
        assert_eq!(*call.args, json!("{\"question\": \"Wh"));
        assert!(error.contains("EOF"), "{error}");
    }

    #[test]
    fn text_is_streamed_and_a_truncated_stream_fails() {
        let events = decode(&[
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
        ])
        .unwrap();
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                ModelEvent::Finish(StopReason::EndTurn)
            ]
        );
        let error = decode(&[r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#]).unwrap_err();
        assert_eq!(error.code(), "invalid_response");
    }

    #[test]
    fn error_chunks_fail_the_step() {
        let error =
            decode(&[r#"{"error":{"message":"model overloaded","type":"server_error"}}"#]).unwrap_err();
        assert_eq!(error.code(), "provider_error");
        assert!(error.message.contains("model overloaded"), "{}", error.message);
    }
}
