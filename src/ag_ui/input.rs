//! The request body, a `RunAgentInput` (of `@ag-ui/core` 1.0 or the 0.0.x
//! generation before it), read into what agentd needs of it: the thread,
//! the client's messages, its frontend tools, its resume entries and the
//! generation it speaks ([`Generation`], from `protocolVersion`). Every
//! refusal names the field at fault (`messages[2].content`). `context`,
//! `state` and `forwardedProps` are accepted and not used. Which of the messages are new input is
//! decided by [`new_input`], against the thread's stored history.

use serde_json::{Map, Value};

use super::error::ApiError;
use crate::domain::{any_object, Message, ThreadId, ToolDefinition};

/// A message of the client's history, as far as agentd reads it.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ClientMessage {
    User(String),
    System(String),
    Assistant(String),
    /// The result of a tool the client ran.
    Tool {
        tool_call_id: String,
        content: String,
        is_error: bool,
    },
    /// Activity, reasoning: nothing the model is sent.
    Other,
}

/// What a resume entry says of its interrupt.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum ResumeStatus {
    Resolved(Option<Value>),
    Cancelled,
}

/// One entry of `resume`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ResumeEntry {
    pub interrupt_id: String,
    pub status: ResumeStatus,
}

/// The generation of AG-UI a client speaks, which decides the shapes of
/// what it is sent: `RUN_FINISHED`'s outcomes differ between them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Generation {
    /// The 0.0.x clients (`@ag-ui/client` 0.0.59, which CopilotKit pins):
    /// they send no `protocolVersion`, and their schema knows the outcomes
    /// `success` (with nothing else in it) and `interrupt` only.
    #[default]
    Legacy,
    /// `@ag-ui/client` 1.0 and later: `protocolVersion` `"1.0"` or above.
    V1,
}

impl Generation {
    /// The generation of a request whose `protocolVersion` is `version`:
    /// absent or `0.x` is the 0.0.x generation; anything else names 1.0
    /// or a later one, which speaks 1.0's shapes.
    pub(super) fn of(version: Option<&str>) -> Self {
        let major = version.map(|version| version.trim().split('.').next().unwrap_or_default());
        match major {
            None | Some("0") => Self::Legacy,
            Some(_) => Self::V1,
        }
    }
}

/// A `RunAgentInput`, read.
#[derive(Clone, Debug)]
pub(super) struct RunInput {
    pub generation: Generation,
    pub thread_id: ThreadId,
    /// The client's run id: reported back nowhere (agentd's run id is).
    pub client_run_id: String,
    pub messages: Vec<ClientMessage>,
    pub tools: Vec<ToolDefinition>,
    pub resume: Vec<ResumeEntry>,
}

fn string<'a>(object: &'a Map<String, Value>, key: &str, at: &str) -> Result<&'a str, ApiError> {
    match object.get(key) {
        Some(Value::String(text)) => Ok(text),
        Some(_) => Err(ApiError::invalid_body(format!("{at}{key}"), "must be a string")),
        None => Err(ApiError::invalid_body(format!("{at}{key}"), "is required")),
    }
}

fn optional_array<'a>(object: &'a Map<String, Value>, key: &str) -> Result<&'a [Value], ApiError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(ApiError::invalid_body(key.to_owned(), "must be an array")),
    }
}

fn object<'a>(value: &'a Value, at: &str) -> Result<&'a Map<String, Value>, ApiError> {
    value
        .as_object()
        .ok_or_else(|| ApiError::invalid_body(at.to_owned(), "must be an object"))
}

/// A message's content: a string, or parts of which the text ones count.
fn content(message: &Map<String, Value>, at: &str) -> Result<String, ApiError> {
    match message.get("content") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (index, part) in parts.iter().enumerate() {
                let part = object(part, &format!("{at}content[{index}]"))?;
                if part.get("type").and_then(Value::as_str) == Some("text") {
                    text.push_str(string(part, "text", &format!("{at}content[{index}]."))?);
                }
            }
            Ok(text)
        }
        Some(_) => Err(ApiError::invalid_body(
            format!("{at}content"),
            "must be a string or an array of content parts",
        )),
    }
}

fn message(value: &Value, index: usize) -> Result<ClientMessage, ApiError> {
    let at = format!("messages[{index}]");
    let message = object(value, &at)?;
    let at = format!("{at}.");
    string(message, "id", &at)?;
    let role = string(message, "role", &at)?;
    Ok(match role {
        "user" => ClientMessage::User(content(message, &at)?),
        "system" | "developer" => ClientMessage::System(content(message, &at)?),
        "assistant" => ClientMessage::Assistant(content(message, &at)?),
        "tool" => ClientMessage::Tool {
            tool_call_id: string(message, "toolCallId", &at)?.to_owned(),
            content: content(message, &at)?,
            is_error: message.get("error").is_some_and(|error| !error.is_null()),
        },
        "activity" | "reasoning" => ClientMessage::Other,
        _ => {
            return Err(ApiError::invalid_body(
                format!("{at}role"),
                "must be one of developer, system, assistant, user, tool, activity, reasoning",
            ))
        }
    })
}

fn tool(value: &Value, index: usize) -> Result<ToolDefinition, ApiError> {
    let at = format!("tools[{index}]");
    let tool = object(value, &at)?;
    let at = format!("{at}.");
    let parameters = match tool.get("parameters") {
        None | Some(Value::Null) => any_object(),
        Some(schema @ Value::Object(_)) => schema.clone(),
        Some(_) => {
            return Err(ApiError::invalid_body(
                format!("{at}parameters"),
                "must be a JSON Schema object",
            ))
        }
    };
    Ok(ToolDefinition {
        name: string(tool, "name", &at)?.to_owned(),
        description: string(tool, "description", &at)?.to_owned(),
        input_schema: parameters,
        require_approval: false,
    })
}

fn resume_entry(value: &Value, index: usize) -> Result<ResumeEntry, ApiError> {
    let at = format!("resume[{index}]");
    let entry = object(value, &at)?;
    let at = format!("{at}.");
    let interrupt_id = string(entry, "interruptId", &at)?.to_owned();
    let status = match string(entry, "status", &at)? {
        "resolved" => ResumeStatus::Resolved(entry.get("payload").filter(|p| !p.is_null()).cloned()),
        "cancelled" => ResumeStatus::Cancelled,
        _ => {
            return Err(ApiError::invalid_body(
                format!("{at}status"),
                "must be resolved or cancelled",
            ))
        }
    };
    Ok(ResumeEntry { interrupt_id, status })
}

/// Reads `body`, or says which field is wrong.
pub(super) fn parse(body: &[u8]) -> Result<RunInput, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|error| ApiError::invalid_body(String::new(), format!("not JSON: {error}")))?;
    let input = object(&value, "")
        .map_err(|_| ApiError::invalid_body(String::new(), "the body must be a RunAgentInput object"))?;
    let thread = string(input, "threadId", "")?;
    let thread_id = ThreadId::new(thread)
        .map_err(|error| ApiError::invalid_body("threadId".into(), error.to_string()))?;
    let client_run_id = string(input, "runId", "")?.to_owned();
    let generation = match input.get("protocolVersion") {
        None | Some(Value::Null) => Generation::Legacy,
        Some(Value::String(version)) => Generation::of(Some(version)),
        Some(_) => {
            return Err(ApiError::invalid_body(
                "protocolVersion".into(),
                "must be a string",
            ))
        }
    };
    let messages = match input.get("messages") {
        Some(Value::Array(messages)) => messages
            .iter()
            .enumerate()
            .map(|(index, value)| message(value, index))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ApiError::invalid_body("messages".into(), "must be an array")),
        None => return Err(ApiError::invalid_body("messages".into(), "is required")),
    };
    let tools = optional_array(input, "tools")?
        .iter()
        .enumerate()
        .map(|(index, value)| tool(value, index))
        .collect::<Result<_, _>>()?;
    let resume = optional_array(input, "resume")?
        .iter()
        .enumerate()
        .map(|(index, value)| resume_entry(value, index))
        .collect::<Result<_, _>>()?;
    Ok(RunInput {
        generation,
        thread_id,
        client_run_id,
        messages,
        tools,
        resume,
    })
}

/// The new input among `messages`. A thread agentd already holds is
/// authoritative: the client's copy of it is everything up to its last
/// assistant message, and only what follows (new user messages, results
/// of frontend tools) is new. A new thread takes the whole list, the
/// assistant's earlier text included (its tool calls and their results,
/// which agentd never saw, are left out).
pub(super) fn new_input(messages: &[ClientMessage], thread_exists: bool) -> &[ClientMessage] {
    if !thread_exists {
        return messages;
    }
    let start = messages
        .iter()
        .rposition(|message| matches!(message, ClientMessage::Assistant(_)))
        .map_or(0, |last| last + 1);
    &messages[start..]
}

/// The messages a run starts from.
pub(super) fn turns(messages: &[ClientMessage]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|message| match message {
            ClientMessage::User(text) => Some(Message::user(text.clone())),
            ClientMessage::System(text) => Some(Message::System {
                content: text.clone(),
            }),
            ClientMessage::Assistant(text) if !text.is_empty() => Some(Message::Assistant {
                content: text.clone(),
                tool_calls: Vec::new(),
            }),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(value: Value) -> Vec<u8> {
        serde_json::to_vec(&value).unwrap()
    }

    #[test]
    fn every_refusal_names_its_field() {
        let field = |value: Value| parse(&body(value)).unwrap_err().field.unwrap_or_default();
        assert_eq!(field(json!({"runId": "r", "messages": []})), "threadId");
        assert_eq!(
            field(json!({"threadId": "t t", "runId": "r", "messages": []})),
            "threadId"
        );
        assert_eq!(field(json!({"threadId": "t", "messages": []})), "runId");
        assert_eq!(field(json!({"threadId": "t", "runId": "r"})), "messages");
        assert_eq!(
            field(
                json!({"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user", "content": 3}]})
            ),
            "messages[0].content"
        );
        assert_eq!(
            field(json!({"threadId": "t", "runId": "r", "messages": [], "tools": [{"name": "x"}]})),
            "tools[0].description"
        );
        assert_eq!(
            field(json!({"threadId": "t", "runId": "r", "messages": [],
                "resume": [{"interruptId": "a", "status": "maybe"}]})),
            "resume[0].status"
        );
    }

    #[test]
    fn the_protocol_version_names_the_generation() {
        let generation = |version: Value| {
            let mut input = json!({"threadId": "t", "runId": "r", "messages": []});
            if !version.is_null() {
                input["protocolVersion"] = version;
            }
            parse(&body(input)).map(|input| input.generation)
        };
        assert_eq!(generation(Value::Null).unwrap(), Generation::Legacy);
        assert_eq!(generation(json!("0.0.59")).unwrap(), Generation::Legacy);
        assert_eq!(generation(json!("1.0")).unwrap(), Generation::V1);
        assert_eq!(generation(json!("1.2.0")).unwrap(), Generation::V1);
        assert_eq!(
            generation(json!(1)).unwrap_err().field.as_deref(),
            Some("protocolVersion")
        );
    }

    #[test]
    fn a_known_thread_takes_what_follows_the_last_assistant_message() {
        let input = parse(&body(json!({
            "threadId": "t", "runId": "r",
            "messages": [
                {"id": "1", "role": "user", "content": "hello"},
                {"id": "2", "role": "assistant", "content": "hi"},
                {"id": "3", "role": "user", "content": [{"type": "text", "text": "again"}]},
            ],
        })))
        .unwrap();
        assert_eq!(
            new_input(&input.messages, true),
            [ClientMessage::User("again".into())]
        );
        assert_eq!(new_input(&input.messages, false).len(), 3);
        assert_eq!(turns(new_input(&input.messages, false)).len(), 3);
    }
}
