//! What the runtime refuses, and why. The gRPC edge maps each variant to a
//! status in one place (`grpc/status.rs`).

use crate::domain::{AnswerError, RunId, RunStatus};
use crate::metrics::ResumeRejection;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("agent {0:?} not found")]
    AgentNotFound(String),
    #[error("agent {agent:?} has no tool {tool:?}")]
    ToolNotFound { agent: String, tool: String },
    /// ExecuteTool on a tool whose call would wait for a person's
    /// approval in a run (`why`: `require_approval`, or the rule that
    /// asks): outside a run nobody can approve it.
    #[error(
        "agent {agent:?}: a call of {tool:?} waits for a person's approval ({why}), and ExecuteTool \
         has no run to wait in: call it in a run, where it can be approved"
    )]
    ApprovalRequired {
        agent: String,
        tool: String,
        why: String,
    },
    /// ExecuteTool on a call that an approval rule declines, as it would
    /// in a run: the tool never runs.
    #[error(
        "approval rule {rule} declined this call of {tool:?}{}",
        reason_suffix(reason)
    )]
    ApprovalDeclined {
        agent: String,
        tool: String,
        /// The rule's place, `AGENT/TOOL/rules[N]`.
        rule: String,
        /// The rule's `when`.
        when: String,
        reason: String,
    },
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
    #[error("grant not found")]
    GrantNotFound,
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
    MalformedCursor(#[from] crate::domain::MalformedCursor),
    #[error(
        "cursor {0:?} is after every event this server's store has given: pass the cursor of a \
         RunEvent, or none to watch from now on"
    )]
    UnknownCursor(String),
    #[error(
        "cursor {cursor:?} is older than the run events this server keeps ({retention}): read the \
         runs with ListRuns, then watch from now on (no after_cursor)"
    )]
    CursorExpired { cursor: String, retention: String },
    /// A transition the run's phase does not allow (see
    /// [`crate::domain::WrongPhase`]).
    #[error(transparent)]
    WrongPhase(#[from] crate::domain::WrongPhase),
    #[error(transparent)]
    Store(StoreError),
}

/// `: REASON`, or nothing without a reason.
fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

impl From<StoreError> for RuntimeError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => RuntimeError::RunNotFound,
            other => RuntimeError::Store(other),
        }
    }
}

impl RuntimeError {
    /// Why a Resume refused with this error was refused, for the metrics;
    /// `None` when the answer was not at fault (the store failed, or the
    /// run kept changing), which is not counted as a rejection.
    pub fn resume_rejection(&self) -> Option<ResumeRejection> {
        Some(match self {
            RuntimeError::InvalidAnswer(_) => ResumeRejection::InvalidAnswer,
            RuntimeError::InvalidRequest { .. } => ResumeRejection::InvalidRequest,
            RuntimeError::NotSuspended(_) => ResumeRejection::NotSuspended,
            RuntimeError::ToolCallNotPending { .. } => ResumeRejection::ToolCallNotPending,
            RuntimeError::ToolCallAmbiguous { .. } => ResumeRejection::ToolCallAmbiguous,
            RuntimeError::ResumeConflict => ResumeRejection::ResumeConflict,
            RuntimeError::RequestIdReused(_) => ResumeRejection::RequestIdReused,
            RuntimeError::RunNotFound => ResumeRejection::RunNotFound,
            RuntimeError::AgentGone(_) => ResumeRejection::AgentGone,
            RuntimeError::Store(_) | RuntimeError::Busy => return None,
            // Refusals a Resume cannot meet today; counted rather than lost.
            _ => ResumeRejection::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_answer_is_a_rejection_and_a_failing_store_is_not() {
        let not_suspended = RuntimeError::NotSuspended(RunStatus::Completed);
        assert_eq!(
            not_suspended.resume_rejection(),
            Some(ResumeRejection::NotSuspended)
        );
        assert_eq!(RuntimeError::Busy.resume_rejection(), None);
        let store = RuntimeError::Store(StoreError::Backend("down".into()));
        assert_eq!(store.resume_rejection(), None);
        let agent = RuntimeError::AgentNotFound("a".into());
        assert_eq!(agent.resume_rejection(), Some(ResumeRejection::Other));
    }
}
