//! The conversation as the agent loop keeps it: provider-neutral messages,
//! tool calls and tool results included.

use serde::{Deserialize, Serialize};

use super::ToolCall;

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        tool_name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    pub fn tool(id: &str, name: &str, content: impl Into<String>, is_error: bool) -> Self {
        Message::Tool {
            tool_call_id: id.to_owned(),
            tool_name: name.to_owned(),
            content: content.into(),
            is_error,
        }
    }

    /// The message's text (without tool call arguments).
    pub fn content(&self) -> &str {
        match self {
            Message::System { content }
            | Message::User { content }
            | Message::Assistant { content, .. }
            | Message::Tool { content, .. } => content,
        }
    }

    /// Characters of text the message carries (for approximate usage).
    pub fn text_len(&self) -> usize {
        match self {
            Message::System { content } | Message::User { content } | Message::Tool { content, .. } => {
                content.len()
            }
            Message::Assistant { content, tool_calls } => {
                content.len() + tool_calls.iter().map(|c| c.args.json_len()).sum::<usize>()
            }
        }
    }
}
