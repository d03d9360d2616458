//! Client-executed tools: tools that the caller runs itself, wherever they
//! live (an orchestrator in Go, Python or Java). A run declares them in
//! `StreamAgentRequest.tools`, or an agent in `agentd.toml`
//! (`kind = "client"`). Calling one suspends the run with a `client_tool`
//! payload (the tool's name and its validated arguments); the caller resumes
//! with `data`, the tool's result. This module never runs anything itself.
//!
//! Resume `data` convention: an object whose keys are `is_error` (a boolean)
//! and, optionally, `content` is a result envelope: the model sees `content`
//! (a string as is, any other JSON as JSON text) flagged `is_error`. Any
//! other value is a successful result, shown to the model as is (a string)
//! or as JSON text.

use async_trait::async_trait;

use serde_json::{Map, Value};

use super::{Resumed, Tool, ToolContext, ToolOutcome};
use crate::domain::{Answer, AnswerError, SuspendPayload, ToolDefinition, ToolOutput, ToolSpec};

/// Longest tool name accepted (what model providers accept).
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// What is wrong with a tool's name or schema: the part at fault (`name`,
/// `input_schema`) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{part}: {reason}")]
pub struct DefinitionError {
    pub part: &'static str,
    pub reason: String,
}

/// Checks a tool name: 1 to 64 characters from `[A-Za-z0-9_-]`.
pub fn check_tool_name(name: &str) -> Result<(), DefinitionError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid {
        Ok(())
    } else {
        Err(DefinitionError {
            part: "name",
            reason: format!(
                "{name:?} is not a valid tool name: use 1 to {MAX_TOOL_NAME_LEN} letters, digits, `_` or `-`"
            ),
        })
    }
}

/// Checks that `schema` is a JSON Schema of an object (tool arguments are
/// always objects) that compiles.
pub fn check_input_schema(schema: &Value) -> Result<(), DefinitionError> {
    let wrong = |reason: String| DefinitionError {
        part: "input_schema",
        reason,
    };
    let Value::Object(object) = schema else {
        return Err(wrong("must be a JSON Schema object".into()));
    };
    match object.get("type") {
        None => {}
        Some(Value::String(kind)) if kind == "object" => {}
        Some(other) => {
            return Err(wrong(format!(
                "must describe an object (\"type\": \"object\"), not {other}"
            )))
        }
    }
    jsonschema::validator_for(schema)
        .map(|_| ())
        .map_err(|e| wrong(format!("is not a valid JSON Schema: {e}")))
}

/// Checks a client tool's definition: its name and its input schema.
pub fn check_definition(definition: &ToolDefinition) -> Result<(), DefinitionError> {
    check_tool_name(&definition.name)?;
    check_input_schema(&definition.input_schema)
}

/// A client-executed tool.
pub struct ClientTool {
    spec: ToolSpec,
}

impl ClientTool {
    pub fn new(definition: &ToolDefinition) -> Self {
        Self {
            spec: ToolSpec {
                name: definition.name.clone(),
                description: definition.description.clone(),
                input_schema: definition.input_schema.clone(),
                source: "client",
                resume_schema: None,
            },
        }
    }
}

#[async_trait]
impl Tool for ClientTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// It only suspends the run.
    fn has_side_effects(&self) -> bool {
        false
    }

    async fn execute(&self, args: &Value, ctx: ToolContext) -> ToolOutcome {
        if ctx.can_suspend() {
            ToolOutcome::Suspend(SuspendPayload::ClientTool {
                tool_name: self.spec.name.clone(),
                args: args.clone(),
            })
        } else {
            ToolOutcome::Done(ToolOutput::error(format!(
                "{} is executed by the caller: it can only be called inside a run, \
                 which waits for the caller's result",
                self.spec.name
            )))
        }
    }

    fn resume(&self, payload: &SuspendPayload, answer: &Answer) -> Result<Resumed, AnswerError> {
        match (payload, answer) {
            (SuspendPayload::ClientTool { .. }, Answer::Data(data)) => client_result(data),
            _ => super::resume_with_data(payload, answer),
        }
        .map(Resumed::Output)
    }
}

/// The result the model sees for the resume `data` of a client tool.
pub fn client_result(data: &Value) -> Result<ToolOutput, AnswerError> {
    let Some(envelope) = envelope(data) else {
        return Ok(ToolOutput::ok(as_text(data)));
    };
    let Some(&Value::Bool(is_error)) = envelope.get("is_error") else {
        return Err(AnswerError::new(
            "data",
            "data/is_error: must be a boolean (a result envelope is {\"is_error\": bool, \"content\": ...})",
        ));
    };
    let content = match envelope.get("content") {
        Some(content) => as_text(content),
        None if is_error => "The tool failed without saying why.".to_owned(),
        None => String::new(),
    };
    Ok(ToolOutput { content, is_error })
}

/// `data` as a result envelope: an object with `is_error` and no keys other
/// than `is_error` and `content`.
fn envelope(data: &Value) -> Option<&Map<String, Value>> {
    let object = data.as_object()?;
    let only_envelope_keys = object.keys().all(|k| k == "is_error" || k == "content");
    (object.contains_key("is_error") && only_envelope_keys).then_some(object)
}

/// A string as is; any other JSON value as JSON text.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::any_object;
    use serde_json::json;

    fn definition(name: &str, input_schema: Value) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: String::new(),
            input_schema,
            require_approval: false,
        }
    }

    #[test]
    fn names_follow_the_pattern() {
        for good in ["a", "lookup_order", "get-weather", &"x".repeat(64)] {
            assert_eq!(check_tool_name(good), Ok(()), "{good}");
        }
        for bad in ["", "has space", "dots.in.name", "mcp:x", &"x".repeat(65), "é"] {
            assert_eq!(check_tool_name(bad).unwrap_err().part, "name", "{bad}");
        }
    }

    #[test]
    fn schemas_must_be_object_schemas_that_compile() {
        assert_eq!(check_definition(&definition("a", any_object())), Ok(()));
        assert_eq!(
            check_definition(&definition("a", json!({"properties": {"x": {"type": "string"}}}))),
            Ok(())
        );
        for bad in [
            json!("object"),
            json!({"type": "string"}),
            json!({"type": "object", "properties": {"x": {"type": 12}}}),
        ] {
            let error = check_definition(&definition("a", bad.clone())).unwrap_err();
            assert_eq!(error.part, "input_schema", "{bad}");
        }
    }

    #[test]
    fn data_is_the_result_and_an_envelope_can_flag_an_error() {
        let ok = |data| client_result(&data).unwrap();
        assert_eq!(
            ok(json!({"status": "shipped"})),
            ToolOutput::ok(r#"{"status":"shipped"}"#)
        );
        assert_eq!(ok(json!("plain text")), ToolOutput::ok("plain text"));
        assert_eq!(
            ok(json!({"is_error": true, "content": "Order 42 not found"})),
            ToolOutput::error("Order 42 not found")
        );
        assert_eq!(
            ok(json!({"is_error": false, "content": {"n": 1}})),
            ToolOutput::ok(r#"{"n":1}"#)
        );
        assert!(ok(json!({"is_error": true})).is_error);
        // Other keys: not an envelope, just data.
        assert_eq!(
            ok(json!({"is_error": true, "code": 3})),
            ToolOutput::ok(r#"{"code":3,"is_error":true}"#)
        );
        assert_eq!(
            client_result(&json!({"is_error": "yes"})).unwrap_err().field,
            "data"
        );
    }

    #[test]
    fn suspends_in_a_run_and_refuses_outside() {
        let tool = ClientTool::new(&definition("lookup", any_object()));
        let run = |ctx| {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(tool.execute(&json!({"id": 1}), ctx))
        };
        assert_eq!(
            run(ToolContext::IN_RUN),
            ToolOutcome::Suspend(SuspendPayload::ClientTool {
                tool_name: "lookup".into(),
                args: json!({"id": 1})
            })
        );
        let ToolOutcome::Done(output) = run(ToolContext::STANDALONE) else {
            panic!("expected a result");
        };
        assert!(output.is_error);
    }
}
