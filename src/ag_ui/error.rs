//! A request refused before any event: an HTTP status with the JSON body
//! `{"error": {"code", "message", "field", "interruptId", "runId",
//! "interrupts"}}` (all but the first two where they apply: a busy
//! thread's refusal names its run and carries its open interrupts). Every
//! runtime error maps here, in one place.

use axum::extract::rejection::BytesRejection;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use crate::domain::AnswerError;
use crate::limits::Limits;
use crate::runtime::RuntimeError;

/// A refusal, as the client reads it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    pub interrupt_id: Option<String>,
    /// What a busy thread's refusal says of its run.
    pub busy: Option<Box<Busy>>,
}

/// The run a busy thread's refusal is about, and the interrupts it waits
/// on, as `RUN_FINISHED` gave them (none while it runs).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Busy {
    pub run_id: String,
    pub interrupts: Option<Vec<Value>>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            field: None,
            interrupt_id: None,
            busy: None,
        }
    }

    /// A new message on a thread whose run `run_id` still runs or waits:
    /// `interrupts` are what it waits on (none while it runs).
    pub(crate) fn thread_busy(
        message: impl Into<String>,
        run_id: String,
        interrupts: Option<Vec<Value>>,
    ) -> Self {
        Self {
            busy: Some(Box::new(Busy { run_id, interrupts })),
            ..Self::new(StatusCode::CONFLICT, "thread_busy", message)
        }
    }

    /// A body that is not a valid `RunAgentInput`: `field` (empty: the
    /// body as a whole) and what is wrong with it.
    pub(crate) fn invalid_body(field: String, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        let message = if field.is_empty() {
            reason
        } else {
            format!("{field} {reason}")
        };
        Self {
            field: (!field.is_empty()).then_some(field),
            ..Self::new(StatusCode::BAD_REQUEST, "invalid_body", message)
        }
    }

    /// A body that could not be read: over `limits.max_request_bytes`
    /// (413 `request_too_large`), or cut off (400 `invalid_body`).
    pub(crate) fn unreadable(rejection: BytesRejection, limits: &Limits) -> Self {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            let max = limits.max_request_bytes;
            return Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                format!("the body is larger than limits.max_request_bytes ({max} bytes)"),
            );
        }
        Self::invalid_body(
            String::new(),
            format!("the body could not be read: {}", rejection.body_text()),
        )
    }

    /// An answer that does not fit its interrupt.
    pub(crate) fn invalid_answer(interrupt_id: &str, field: String, message: impl Into<String>) -> Self {
        Self {
            field: Some(field),
            interrupt_id: Some(interrupt_id.to_owned()),
            ..Self::new(StatusCode::BAD_REQUEST, "invalid_answer", message)
        }
    }

    /// An interrupt that is no longer open.
    pub(crate) fn not_open(interrupt_id: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            interrupt_id: interrupt_id.map(str::to_owned),
            ..Self::new(StatusCode::CONFLICT, "interrupt_not_open", message)
        }
    }

    pub(crate) fn with_interrupt(mut self, interrupt_id: &str) -> Self {
        self.interrupt_id.get_or_insert_with(|| interrupt_id.to_owned());
        self
    }
}

/// Where in a resume entry's payload `error` (named as agentd.v1 names
/// it: `text`, `selections.labels`, `approval.edited_args`,
/// `elicitation.content.email`) lies: `resume[i].payload...`.
pub(super) fn payload_field(entry: usize, error: &AnswerError) -> String {
    let field = error
        .violations
        .first()
        .map_or(error.field, |(field, _)| field.as_str());
    let rest = field.split_once('.').map_or("", |(_, rest)| rest);
    let rest = match rest {
        "labels" | "" => String::new(),
        "edited_args" => ".editedArgs".to_owned(),
        rest => format!(".{rest}"),
    };
    format!("resume[{entry}].payload{rest}")
}

/// What a refused answer says, with the labels that would do.
pub(super) fn answer_message(error: &AnswerError) -> String {
    let mut message = error.reason.clone();
    for (field, violation) in &error.violations {
        message.push_str(&format!("; {field}: {violation}"));
    }
    if !error.valid_labels.is_empty() {
        message.push_str(&format!(" (valid: {})", error.valid_labels.join(", ")));
    }
    message
}

impl From<RuntimeError> for ApiError {
    fn from(error: RuntimeError) -> Self {
        use StatusCode as S;
        let message = error.to_string();
        let (status, code) = match &error {
            RuntimeError::AgentNotFound(_) | RuntimeError::ToolNotFound { .. } => (S::NOT_FOUND, "not_found"),
            RuntimeError::RunNotFound | RuntimeError::ThreadNotFound | RuntimeError::GrantNotFound => {
                (S::NOT_FOUND, "not_found")
            }
            RuntimeError::InvalidRequest { field, .. } => {
                return Self {
                    field: Some((*field).to_owned()),
                    ..Self::new(S::BAD_REQUEST, "invalid_body", message)
                }
            }
            RuntimeError::InvalidRunTool(_) => {
                return Self {
                    field: Some("tools".to_owned()),
                    ..Self::new(S::BAD_REQUEST, "invalid_body", message)
                }
            }
            RuntimeError::LimitExceeded(_) => (S::BAD_REQUEST, "limit_exceeded"),
            RuntimeError::InvalidAnswer(_) | RuntimeError::ToolCallAmbiguous { .. } => {
                (S::BAD_REQUEST, "invalid_answer")
            }
            RuntimeError::MalformedCursor(_)
            | RuntimeError::UnknownCursor(_)
            | RuntimeError::CursorExpired { .. } => (S::BAD_REQUEST, "invalid_body"),
            RuntimeError::TooManyRuns { .. } => (S::TOO_MANY_REQUESTS, "too_many_runs"),
            RuntimeError::NotSuspended(_)
            | RuntimeError::ToolCallNotPending { .. }
            | RuntimeError::ResumeConflict => (S::CONFLICT, "interrupt_not_open"),
            RuntimeError::ThreadBusy { .. } | RuntimeError::NotAutoResumable { .. } => {
                (S::CONFLICT, "thread_busy")
            }
            RuntimeError::ApprovalRequired { .. } | RuntimeError::ApprovalDeclined { .. } => {
                (S::CONFLICT, "approval_required")
            }
            RuntimeError::DuplicateRequest(_)
            | RuntimeError::RequestIdReused(_)
            | RuntimeError::NotCancellable(_)
            | RuntimeError::AgentGone(_)
            | RuntimeError::WrongPhase(_) => (S::CONFLICT, "conflict"),
            RuntimeError::Busy | RuntimeError::Store(_) => (S::SERVICE_UNAVAILABLE, "unavailable"),
        };
        Self::new(status, code, message)
    }
}

/// A stream the gate refused: 503 while the server drains, 429 past the
/// tenant's cap, the limit named.
impl From<crate::door::StreamRefused> for ApiError {
    fn from(refused: crate::door::StreamRefused) -> Self {
        use crate::door::StreamRefused;
        let (status, code) = match refused {
            StreamRefused::Draining => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            StreamRefused::TooManyStreams { .. } => (StatusCode::TOO_MANY_REQUESTS, "too_many_streams"),
        };
        Self::new(status, code, refused.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = Map::new();
        error.insert("code".into(), json!(self.code));
        error.insert("message".into(), json!(self.message));
        if let Some(field) = self.field {
            error.insert("field".into(), json!(field));
        }
        if let Some(id) = self.interrupt_id {
            error.insert("interruptId".into(), json!(id));
        }
        if let Some(busy) = self.busy {
            error.insert("runId".into(), json!(busy.run_id));
            if let Some(interrupts) = busy.interrupts {
                error.insert("interrupts".into(), Value::Array(interrupts));
            }
        }
        let body = json!({ "error": Value::Object(error) });
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_fields_follow_the_answer_field() {
        let error = AnswerError::new("selections.labels", "no such label");
        assert_eq!(payload_field(1, &error), "resume[1].payload");
        let error = AnswerError::new("approval.edited_args", "not an object");
        assert_eq!(payload_field(0, &error), "resume[0].payload.editedArgs");
        let mut error = AnswerError::new("elicitation.content", "invalid");
        error.violations = vec![("elicitation.content.email".into(), "required".into())];
        assert_eq!(payload_field(2, &error), "resume[2].payload.content.email");
    }
}
