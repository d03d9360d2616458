//! Tools: what a model can call. A tool's outcome is a value — it is done,
//! or it suspends the run with a payload — never an exception. Tools do no
//! persistence of their own; the runtime stores what they return.

mod ask_user;
mod catalog;
pub mod client;
pub mod http;
mod human_review;
pub mod mcp;
mod registry;
mod secrets;

use async_trait::async_trait;
use serde_json::Value;

use crate::domain::{Answer, AnswerError, SuspendPayload, ToolOutput, ToolSpec};

pub use ask_user::AskUser;
pub(crate) use catalog::mcp_reference;
pub use catalog::{CatalogError, ClientToolConfig, ToolCatalog, ToolConfig};
pub use client::ClientTool;
pub(crate) use human_review::HumanReview;
pub(crate) use registry::{RegisteredTool, ToolSet};

pub(crate) use secrets::expand_env;

/// What an answer to a tool's suspension leads to.
#[derive(Clone, Debug, PartialEq)]
pub enum Resumed {
    /// The answer makes the call's result.
    Output(ToolOutput),
    /// The tool goes on with the answer ([`Tool::proceed`]): the call is
    /// not over, and may suspend again.
    Proceed,
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

    /// Whether a call may act outside the run (an HTTP request, an MCP
    /// server's tool, anything a library user's tool does): a run not yet
    /// stored is written before such a call runs, so that no crash can
    /// lose the run that made it. Only tools that merely suspend the run
    /// (ask_user, human_review, client tools, which the client runs after
    /// the suspension is stored) say no.
    fn has_side_effects(&self) -> bool {
        true
    }

    /// Turns an answer to this tool's suspension into the result the model
    /// sees (or into going on with the call), or says why the answer does
    /// not fit. Must not change anything: a rejected answer leaves the run
    /// as it was.
    fn resume(&self, payload: &SuspendPayload, answer: &Answer) -> Result<Resumed, AnswerError> {
        resume_with_data(payload, answer).map(Resumed::Output)
    }

    /// The run no longer waits for an answer to this tool's suspension on
    /// `payload` (it was cancelled, or it expired): the tool lets go of
    /// what it holds for it. Best effort, on the replica that ended it.
    fn abandon(&self, payload: &SuspendPayload) {
        let _ = payload;
    }

    /// Goes on with the call made with `args` after `answer` (which
    /// [`Tool::resume`] accepted as [`Resumed::Proceed`]) to its suspension
    /// on `payload`. Only tools that proceed implement it.
    async fn proceed(
        &self,
        args: &Value,
        payload: &SuspendPayload,
        answer: &Answer,
        ctx: ToolContext,
    ) -> ToolOutcome {
        let _ = (args, payload, answer, ctx);
        ToolOutcome::Done(ToolOutput::error(format!(
            "{} cannot go on after an answer",
            self.spec().name
        )))
    }
}

/// The default resumption: `data` answers a custom or client-tool payload
/// and becomes the result as JSON text.
fn resume_with_data(payload: &SuspendPayload, answer: &Answer) -> Result<ToolOutput, AnswerError> {
    match (payload, answer) {
        (SuspendPayload::Custom { .. } | SuspendPayload::ClientTool { .. }, Answer::Data(value)) => {
            Ok(ToolOutput::ok(match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            }))
        }
        (SuspendPayload::AskUser(_), _) => Err(AnswerError::new(
            "answer",
            "this call is a question: answer it with text or selections",
        )),
        (SuspendPayload::Elicitation(elicitation), _) => Err(AnswerError::new(
            "answer",
            format!(
                "this call is a request for input from the MCP server {}: answer it with elicitation",
                elicitation.server
            ),
        )),
        (_, other) => Err(AnswerError::new(
            "data",
            format!("this call waits for resume data, not {}", other.field()),
        )),
    }
}
