//! The Messages request body: the conversation as Anthropic requires it.
//! System messages become the top-level `system` field; an assistant turn is
//! content blocks (`text`, then `tool_use {id, name, input}`); the results of
//! its calls go back as ONE user message of `tool_result` blocks
//! `{tool_use_id, content, is_error}`. Consecutive messages of one role are
//! merged into one message, as the API alternates user and assistant turns.

use serde_json::{json, Map, Value};

use crate::domain::{Message, ToolSpec};
use crate::model::ModelRequest;

/// The JSON body asking `model` for a streamed step.
pub(super) fn body(model: &str, request: &ModelRequest<'_>, max_tokens: u32) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), json!(true));
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System { content } if !content.is_empty() => Some(content.as_str()),
            _ => None,
        })
        .collect();
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), messages(request.messages));
    if !request.tools.is_empty() {
        body.insert("tools".into(), tools(&request.tools));
    }
    Value::Object(body)
}

fn messages(messages: &[Message]) -> Value {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Assistant { content, tool_calls } => {
                let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    let input = if call.args.is_object() {
                        Value::clone(&call.args)
                    } else {
                        // Arguments that were not valid JSON; the call's
                        // error result tells the model what went wrong.
                        json!({})
                    };
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
                }));
                ("assistant", blocks)
            }
            Message::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": tool_call_id,
                    "content": content,
                    "is_error": is_error,
                })],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// A text block; the API refuses empty ones.
fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn tools(tools: &[&ToolSpec]) -> Value {
    tools
        .iter()
        .map(|tool| {
            json!({
                "name": tool.name,
                "description": tool.description,
                "input_schema": tool.input_schema,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ToolCall;

    #[test]
    fn tool_results_of_one_turn_share_one_user_message() {
        let history = [
            Message::System {
                content: "Be brief.".into(),
            },
            Message::user("Pick a plan"),
            Message::Assistant {
                content: "Let me ask.".into(),
                tool_calls: vec![
                    ToolCall {
                        id: "toolu_a".into(),
                        name: "ask_user".into(),
                        args: json!({"question": "Which?"}).into(),
                    },
                    ToolCall {
                        id: "toolu_b".into(),
                        name: "ask_user".into(),
                        args: json!("{\"q").into(),
                    },
                ],
            },
            Message::tool("toolu_b", "ask_user", "Invalid JSON", true),
            Message::tool("toolu_a", "ask_user", "User answered: Pro", false),
            Message::Assistant {
                content: "Done.".into(),
                tool_calls: Vec::new(),
            },
        ];
        let request = ModelRequest {
            messages: &history,
            tools: Vec::new(),
        };
        assert_eq!(
            body("claude", &request, 1024),
            json!({
                "model": "claude",
                "max_tokens": 1024,
                "stream": true,
                "system": "Be brief.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Pick a plan"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Let me ask."},
                        {"type": "tool_use", "id": "toolu_a", "name": "ask_user", "input": {"question": "Which?"}},
                        {"type": "tool_use", "id": "toolu_b", "name": "ask_user", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_b", "content": "Invalid JSON", "is_error": true},
                        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "User answered: Pro", "is_error": false},
                    ]},
                    {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
                ],
            })
        );
    }
}
