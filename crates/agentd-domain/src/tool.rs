//! Tool calls as a run keeps them: the call a model made, the result it is
//! given back, and a client-executed tool as a request or the
//! configuration declares it.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::Args;

/// A call of a tool by the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Unique within the run.
    pub id: String,
    pub name: String,
    /// A JSON object.
    pub args: Args,
}

/// A tool as the model (and ListAgents) sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// `builtin`, `client`, `http` or `mcp`.
    pub source: &'static str,
    /// JSON Schema of the resume `data` of a tool that suspends with a
    /// custom payload.
    pub resume_schema: Option<Value>,
}

/// What the model is given back for a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// A tool the caller executes, as a run or the configuration declares it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by: 1 to 64 of `[A-Za-z0-9_-]`.
    pub name: String,
    /// What it does, as the model is told.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its input; an object schema.
    #[serde(default = "any_object")]
    pub input_schema: Value,
    /// Every call of it waits for approval first.
    #[serde(default)]
    pub require_approval: bool,
}

/// The input schema of a tool that declares none: any JSON object.
pub fn any_object() -> Value {
    json!({"type": "object"})
}
