//! The Chat Completions request body: the conversation as OpenAI-compatible
//! servers require it. An assistant message carries its tool calls
//! (`{id, type: "function", function: {name, arguments}}`, the arguments as
//! a JSON string), and every tool result follows as its own `role: "tool"`
//! message naming the call it answers.

use serde_json::{json, Map, Value};

use crate::domain::{Message, ToolSpec};
use crate::model::ModelRequest;

/// The JSON body asking `model` for a streamed step.
pub(super) fn body(model: &str, request: &ModelRequest<'_>, max_tokens: Option<u32>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), messages(request.messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(&request.tools));
    }
    if let Some(max_tokens) = max_tokens {
        body.insert("max_tokens".into(), json!(max_tokens));
    }
    Value::Object(body)
}

fn messages(messages: &[Message]) -> Value {
    messages.iter().map(message).collect()
}

fn message(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant { content, tool_calls } if tool_calls.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        Message::Assistant { content, tool_calls } => {
            let calls: Vec<Value> = tool_calls
                .iter()
                .map(|call| {
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments_text(&call.args)},
                    })
                })
                .collect();
            let content = if content.is_empty() {
                Value::Null
            } else {
                json!(content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Message::Tool {
            tool_call_id,
            content,
            ..
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

/// A call's arguments as sent back: the JSON text of the object. Arguments
/// that were not a JSON object (the model wrote invalid JSON, and was told
/// so by the call's error result) go back as `{}`, since compatible servers
/// parse this field.
pub(super) fn arguments_text(args: &Value) -> String {
    if args.is_object() {
        args.to_string()
    } else {
        "{}".to_owned()
    }
}

fn tools(tools: &[&ToolSpec]) -> Value {
    tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.input_schema,
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ToolCall;

    #[test]
    fn tool_calls_and_results_follow_the_chat_completions_shape() {
        let history = [
            Message::System {
                content: "Be brief.".into(),
            },
            Message::user("Pick a plan"),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall {
                        id: "call_a".into(),
                        name: "ask_user".into(),
                        args: json!({"question": "Which?"}).into(),
                    },
                    ToolCall {
                        id: "call_b".into(),
                        name: "ask_user".into(),
                        args: json!("{\"question\": ").into(),
                    },
                ],
            },
            Message::tool("call_b", "ask_user", "Invalid JSON", true),
            Message::tool("call_a", "ask_user", "User answered: Pro", false),
        ];
        let request = ModelRequest {
            messages: &history,
            tools: Vec::new(),
        };
        assert_eq!(
            body("m", &request, Some(100)),
            json!({
                "model": "m",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100,
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "Pick a plan"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_a", "type": "function",
                         "function": {"name": "ask_user", "arguments": "{\"question\":\"Which?\"}"}},
                        {"id": "call_b", "type": "function",
                         "function": {"name": "ask_user", "arguments": "{}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_b", "content": "Invalid JSON"},
                    {"role": "tool", "tool_call_id": "call_a", "content": "User answered: Pro"},
                ],
            })
        );
    }
}
