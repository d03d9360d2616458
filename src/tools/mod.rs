//! Tools: what a model can call. A tool's outcome is a value — it is done,
//! or it suspends the run with a payload — never an exception. Tools do no
//! persistence of their own; the runtime stores what they return.

mod args;
mod ask_user;
mod catalog;
pub mod client;
pub mod http;
mod human_review;
pub mod mcp;
mod registry;
mod secrets;
mod suspend;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use args::Args;
pub use ask_user::{AskUser, AskUserLimits};
pub use catalog::{mcp_reference, CatalogError, ClientToolConfig, ToolCatalog, ToolConfig};
pub use client::{ClientTool, ToolDefinition};
pub use human_review::HumanReview;
pub use registry::{RegisteredTool, ToolSet};
pub use suspend::{Answer, AnswerError, AskUserOption, AskUserPayload, SelectionMode, SuspendPayload};

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

/// How a tool call ended.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    /// The result is ready.
    Done(ToolOutput),
    /// The run must wait for an answer to this payload.
    Suspend(SuspendPayload),
}

/// Where a tool runs: inside a run (it may suspend) or outside any run
/// (ExecuteTool, or the library calling a tool directly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolContext {
    can_suspend: bool,
}

impl ToolContext {
    /// Inside a run: suspension is available.
    pub const IN_RUN: ToolContext = ToolContext { can_suspend: true };
    /// Outside any run: a tool that would suspend must answer otherwise.
    pub const STANDALONE: ToolContext = ToolContext { can_suspend: false };

    pub fn can_suspend(self) -> bool {
        self.can_suspend
    }
}

/// A tool. `execute` gets arguments already validated against the tool's
/// input schema.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> &ToolSpec;

    async fn execute(&self, args: &Value, ctx: ToolContext) -> ToolOutcome;

    /// Turns an answer to this tool's suspension into the result the model
    /// sees, or says why the answer does not fit. Must not change anything:
    /// a rejected answer leaves the run as it was.
    fn resume(&self, payload: &SuspendPayload, answer: &Answer) -> Result<ToolOutput, AnswerError> {
        suspend::resume_with_data(payload, answer)
    }
}
