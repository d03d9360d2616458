//! What the runtime refuses, and why. The gRPC edge maps each variant to a
//! status in one place (`grpc/status.rs`).

use crate::domain::{AnswerError, RunId, RunStatus};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("agent {0:?} not found")]
    AgentNotFound(String),
    #[error("agent {agent:?} has no tool {tool:?}")]
    ToolNotFound { agent: String, tool: String },
    #[error("run not found")]
    RunNotFound,
    #[error("a run was already started with request_id {0:?}")]
    DuplicateRequest(String),
    #[error("{field}: {reason}")]
    InvalidRequest { field: &'static str, reason: String },
    #[error("{0}")]
    LimitExceeded(#[from] crate::limits::LimitExceeded),
    #[error(
        "tenant {tenant:?} already has {max} runs executing, the most it may \
         (limits.max_concurrent_runs_per_tenant); retry once one suspends or finishes"
    )]
    TooManyRuns { tenant: String, max: usize },
    #[error("{0}")]
    InvalidRunTool(#[from] crate::agent::RunToolError),
    #[error("run is {0}, not suspended")]
    NotSuspended(RunStatus),
    #[error("tool call {tool_call_id:?} is not pending (pending: {})", pending.join(", "))]
    ToolCallNotPending {
        tool_call_id: String,
        pending: Vec<String>,
    },
    #[error("several tool calls are pending ({}): name one in tool_call_id", pending.join(", "))]
    ToolCallAmbiguous { pending: Vec<String> },
    #[error("invalid answer: {0}")]
    InvalidAnswer(#[from] AnswerError),
    #[error("run is no longer suspended: another Resume claimed this suspension")]
    ResumeConflict,
    #[error("run is {0}: only running or suspended runs can be cancelled")]
    NotCancellable(RunStatus),
    #[error("request_id {0:?} was already used with a different answer")]
    RequestIdReused(String),
    #[error("the run kept changing; try again")]
    Busy,
    #[error("thread not found")]
    ThreadNotFound,
    #[error(
        "the thread's latest run {run_id} is {status}: a thread runs one run at a time \
         (answer a suspended run with Resume, or with auto_resume)"
    )]
    ThreadBusy { run_id: RunId, status: RunStatus },
    #[error(
        "the thread's latest run {run_id} is suspended on {waiting}, not on an ask_user \
         question: auto_resume cannot answer it; use Resume"
    )]
    NotAutoResumable { run_id: RunId, waiting: String },
    #[error("run's agent {0:?} is no longer configured on this server")]
    AgentGone(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for RuntimeError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => RuntimeError::RunNotFound,
            other => RuntimeError::Store(other),
        }
    }
}
