//! The one place where domain errors become gRPC statuses, with
//! google.rpc.BadRequest / ErrorInfo details naming the field and reason.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::runtime::RuntimeError;
use crate::runtime::StoreError;

/// The ErrorInfo domain of every agentd error.
const DOMAIN: &str = "agentd.v1";

/// The most bytes of one message or detail value. A status travels in
/// HTTP/2 headers, which clients bound (8 KiB in some); an error that
/// quotes the caller's input (a 60 KB run id, say) must not grow past that,
/// or the client drops the whole connection instead of reading the status.
const MAX_TEXT: usize = 1000;

/// `text`, cut to [`MAX_TEXT`] bytes.
fn clip(text: String) -> String {
    crate::domain::clip(text, MAX_TEXT)
}

/// An ErrorInfo of `reason` in the agentd domain, its values clipped.
pub(super) fn info(reason: &str, metadata: &[(&str, String)]) -> ErrorDetails {
    let metadata: HashMap<String, String> = metadata
        .iter()
        .map(|(k, v)| ((*k).to_owned(), clip(v.clone())))
        .collect();
    ErrorDetails::with_error_info(reason, DOMAIN, metadata)
}

/// [`info`] and a BadRequest violation of `field`, its description clipped.
pub(super) fn bad_request(
    field: &str,
    description: &str,
    reason: &str,
    metadata: &[(&str, String)],
) -> ErrorDetails {
    let mut details = info(reason, metadata);
    details.add_bad_request_violation(field, clip(description.to_owned()));
    details
}

impl From<RuntimeError> for Status {
    fn from(error: RuntimeError) -> Self {
        let message = error.to_string();
        let (code, details) = match &error {
            RuntimeError::AgentNotFound(agent) => (
                Code::NotFound,
                info("AGENT_NOT_FOUND", &[("agent_id", agent.clone())]),
            ),
            RuntimeError::ToolNotFound { agent, tool } => (
                Code::NotFound,
                info(
                    "TOOL_NOT_FOUND",
                    &[("agent_id", agent.clone()), ("tool_name", tool.clone())],
                ),
            ),
            // Both are the tool's approval configuration refusing the call,
            // whoever calls: no other key would pass, so not
            // PERMISSION_DENIED; the call may run in a run (or with other
            // arguments, or once the configuration changes).
            RuntimeError::ApprovalRequired { agent, tool, why } => (
                Code::FailedPrecondition,
                info(
                    "APPROVAL_REQUIRED",
                    &[
                        ("agent_id", agent.clone()),
                        ("tool_name", tool.clone()),
                        ("why", why.clone()),
                    ],
                ),
            ),
            RuntimeError::ApprovalDeclined {
                agent,
                tool,
                rule,
                when,
                reason,
            } => (
                Code::FailedPrecondition,
                info(
                    "APPROVAL_DECLINED",
                    &[
                        ("agent_id", agent.clone()),
                        ("tool_name", tool.clone()),
                        ("rule", rule.clone()),
                        ("when", when.clone()),
                        ("reason", reason.clone()),
                    ],
                ),
            ),
            RuntimeError::RunNotFound => (Code::NotFound, info("RUN_NOT_FOUND", &[])),
            RuntimeError::DuplicateRequest(request_id) => (
                Code::AlreadyExists,
                info("DUPLICATE_REQUEST", &[("request_id", request_id.clone())]),
            ),
            RuntimeError::LimitExceeded(over) => (
                Code::InvalidArgument,
                bad_request(
                    over.field,
                    &message,
                    "LIMIT_EXCEEDED",
                    &[
                        ("limit", over.limit.to_owned()),
                        ("max", over.max.to_string()),
                        ("actual", over.actual.to_string()),
                    ],
                ),
            ),
            RuntimeError::TooManyRuns { tenant, max } => {
                let mut details = info(
                    "CONCURRENT_RUNS_EXHAUSTED",
                    &[
                        ("limit", "max_concurrent_runs_per_tenant".to_owned()),
                        ("max", max.to_string()),
                    ],
                );
                details.add_quota_failure_violation(format!("tenant:{tenant}"), &message);
                (Code::ResourceExhausted, details)
            }
            RuntimeError::InvalidRequest { field, reason } => (
                Code::InvalidArgument,
                bad_request(field, reason, "INVALID_REQUEST", &[]),
            ),
            RuntimeError::InvalidRunTool(error) => (
                Code::InvalidArgument,
                bad_request(&error.field, &error.reason, "INVALID_TOOL_DEFINITION", &[]),
            ),
            RuntimeError::NotSuspended(status) => (
                Code::FailedPrecondition,
                info("RUN_NOT_SUSPENDED", &[("status", status.as_str().to_owned())]),
            ),
            RuntimeError::ToolCallNotPending { pending, .. } => (
                Code::InvalidArgument,
                bad_request(
                    "tool_call_id",
                    &message,
                    "TOOL_CALL_NOT_PENDING",
                    &[("pending", pending.join(", "))],
                ),
            ),
            RuntimeError::ToolCallAmbiguous { pending } => (
                Code::InvalidArgument,
                bad_request(
                    "tool_call_id",
                    &message,
                    "TOOL_CALL_AMBIGUOUS",
                    &[("pending", pending.join(", "))],
                ),
            ),
            RuntimeError::InvalidAnswer(answer) => {
                // Among several answers, fields are named under theirs:
                // `answers[1].selections.labels`.
                let prefix = answer.prefix();
                let field = format!("{prefix}{}", answer.field);
                let mut metadata = vec![("field", field.clone())];
                if let Some((_, Some(tool_call_id))) = &answer.of {
                    metadata.push(("tool_call_id", tool_call_id.clone()));
                }
                if !answer.valid_labels.is_empty() {
                    metadata.push(("valid_labels", answer.valid_labels.join(", ")));
                }
                let details = if answer.violations.is_empty() {
                    bad_request(&field, &answer.reason, "INVALID_ANSWER", &metadata)
                } else {
                    let mut details = info("INVALID_ANSWER", &metadata);
                    for (field, description) in &answer.violations {
                        details.add_bad_request_violation(
                            clip(format!("{prefix}{field}")),
                            clip(description.clone()),
                        );
                    }
                    details
                };
                let message = if answer.valid_labels.is_empty() {
                    message
                } else {
                    format!("{message} (valid labels: {})", answer.valid_labels.join(", "))
                };
                return Status::with_error_details(Code::InvalidArgument, clip(message), details);
            }
            RuntimeError::ResumeConflict => (Code::FailedPrecondition, info("RESUME_CONFLICT", &[])),
            RuntimeError::NotCancellable(status) => (
                Code::FailedPrecondition,
                info("RUN_FINISHED", &[("status", status.as_str().to_owned())]),
            ),
            RuntimeError::RequestIdReused(request_id) => (
                Code::FailedPrecondition,
                info("REQUEST_ID_REUSED", &[("request_id", request_id.clone())]),
            ),
            RuntimeError::Busy => (Code::Unavailable, info("RUN_BUSY", &[])),
            RuntimeError::ThreadNotFound => (Code::NotFound, info("THREAD_NOT_FOUND", &[])),
            RuntimeError::GrantNotFound => (Code::NotFound, info("GRANT_NOT_FOUND", &[])),
            RuntimeError::ThreadBusy { run_id, status } => (
                Code::FailedPrecondition,
                info(
                    "THREAD_BUSY",
                    &[
                        ("run_id", run_id.to_string()),
                        ("status", status.as_str().to_owned()),
                    ],
                ),
            ),
            RuntimeError::NotAutoResumable { run_id, waiting } => (
                Code::FailedPrecondition,
                info(
                    "NOT_AUTO_RESUMABLE",
                    &[("run_id", run_id.to_string()), ("waiting", waiting.clone())],
                ),
            ),
            RuntimeError::AgentGone(agent) => (
                Code::FailedPrecondition,
                info("AGENT_GONE", &[("agent_id", agent.clone())]),
            ),
            RuntimeError::MalformedCursor(_) | RuntimeError::UnknownCursor(_) => (
                Code::InvalidArgument,
                bad_request("after_cursor", &message, "INVALID_CURSOR", &[]),
            ),
            RuntimeError::CursorExpired { retention, .. } => (
                Code::OutOfRange,
                bad_request(
                    "after_cursor",
                    &message,
                    "CURSOR_EXPIRED",
                    &[("retention", retention.clone())],
                ),
            ),
            RuntimeError::WrongPhase(wrong) => (
                Code::FailedPrecondition,
                info(
                    "WRONG_PHASE",
                    &[
                        ("status", wrong.from.as_str().to_owned()),
                        ("transition", wrong.transition.to_owned()),
                    ],
                ),
            ),
            RuntimeError::Store(store) => {
                let code = match store {
                    StoreError::Backend(_) | StoreError::InUse(_) => Code::Unavailable,
                    StoreError::Full(_) => Code::ResourceExhausted,
                    StoreError::Corrupt(_)
                    | StoreError::NotFound
                    | StoreError::AlreadyExists
                    | StoreError::ThreadMoved
                    | StoreError::VersionConflict { .. }
                    | StoreError::Superseded => Code::Internal,
                };
                tracing::error!(error = %store, "store error");
                (code, info("STORE_ERROR", &[]))
            }
        };
        Status::with_error_details(code, clip(message), details)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echoed_input_is_clipped() {
        let status = Status::from(RuntimeError::AgentNotFound("é".repeat(5000)));
        assert!(
            status.message().len() < MAX_TEXT + 40,
            "{}",
            status.message().len()
        );
        assert!(
            status.message().ends_with(" bytes in all)"),
            "{}",
            status.message()
        );
        let info = status.get_details_error_info().unwrap();
        assert!(info.metadata["agent_id"].len() < MAX_TEXT + 40);
        assert_eq!(clip("short".into()), "short");
    }
}
