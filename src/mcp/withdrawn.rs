//! The forms agentd withdrew: an `elicitation/create` whose question was
//! answered elsewhere (gRPC, the inbox, another client) while the host's
//! form was open is cancelled with `notifications/cancelled`, and kept
//! here with what happened. A host that submits the form anyway gets that
//! in words (HTTP 409, a JSON-RPC error without an id, as the transport
//! allows for a message the server cannot accept) instead of a 202 for an
//! answer nobody reads. The newest [`KEPT`] are kept. What became of a
//! question elsewhere is said here too ([`became`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::body::ResponseId;
use crate::domain::{DecisionSource, RunRecord, RunStatus};

/// How many withdrawn forms are remembered.
const KEPT: usize = 1024;

/// The session header of Streamable HTTP.
const SESSION: &str = "mcp-session-id";

/// JSON-RPC's code for a message the server cannot take.
const INVALID_REQUEST: i32 = -32600;

/// One withdrawn form: its session, its request id and what happened.
struct Form {
    session: String,
    id: Value,
    what: String,
}

/// The withdrawn forms of every session (cheap to clone).
#[derive(Clone, Default)]
pub(super) struct Withdrawn {
    forms: Arc<Mutex<VecDeque<Form>>>,
}

impl Withdrawn {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Form>> {
        self.forms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Remembers that request `id` of `session` was withdrawn, and `what`
    /// happened.
    pub(super) fn withdraw(&self, session: &str, id: Value, what: String) {
        let mut forms = self.lock();
        if forms.len() == KEPT {
            forms.pop_front();
        }
        forms.push_back(Form {
            session: session.to_owned(),
            id,
            what,
        });
    }

    /// What happened to request `id` of `session`, if it was withdrawn.
    fn what(&self, session: &str, id: &Value) -> Option<String> {
        self.lock()
            .iter()
            .rev()
            .find(|form| form.session == session && &form.id == id)
            .map(|form| form.what.clone())
    }
}

/// The surface `source` in words.
fn surface(source: DecisionSource) -> &'static str {
    match source {
        DecisionSource::Grpc => "through gRPC",
        DecisionSource::GrpcWeb => "through gRPC-Web",
        DecisionSource::Inbox => "in the inbox",
        DecisionSource::A2a => "through A2A",
        DecisionSource::Mcp => "by another MCP client",
        DecisionSource::AgUi => "through AG-UI",
        DecisionSource::Thread => "by a new message on its thread",
        DecisionSource::Rule => "by an approval rule",
        DecisionSource::Grant => "by an approval remembered earlier",
        DecisionSource::Deadline => "by its deadline",
    }
}

/// What became of call `call`'s question of `run` elsewhere, `when`
/// (before the client's answer came, or while its form was open), in
/// words.
pub(super) fn became(run: &RunRecord, call: &str, when: &str) -> String {
    let decision = run
        .state
        .decisions
        .iter()
        .rev()
        .find(|decision| decision.tool_call_id == call);
    let id = run.id;
    match (decision, run.status()) {
        (Some(decision), _) if decision.decided_by.is_empty() => format!(
            "the question was answered {} {when}, and run {id} went on with that answer",
            surface(decision.source),
        ),
        (Some(decision), _) => format!(
            "the question was answered {} ({}) {when}, and run {id} went on with that answer",
            surface(decision.source),
            decision.decided_by,
        ),
        (None, RunStatus::Cancelled) => format!("run {id} was cancelled elsewhere {when}"),
        (None, RunStatus::Expired) => format!("run {id} expired {when}"),
        (None, _) => {
            format!("the question was answered elsewhere {when}, and run {id} went on with that answer")
        }
    }
}

/// The session a request belongs to.
pub(super) fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(SESSION).and_then(|value| value.to_str().ok())
}

/// The middleware: the answer to a withdrawn form is refused in words;
/// everything else passes. The body has been read in front (`body.rs`),
/// which says whether it is a response, and to which id.
pub(super) async fn refuse_late(
    State(withdrawn): State<Withdrawn>,
    request: Request,
    next: Next,
) -> Response {
    let late = request
        .extensions()
        .get::<ResponseId>()
        .zip(session_of(request.headers()))
        .and_then(|(ResponseId(id), session)| withdrawn.what(session, id));
    let Some(what) = late else {
        return next.run(request).await;
    };
    tracing::info!(what = %what, "an answer to a withdrawn MCP form was refused");
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": INVALID_REQUEST,
            "message": format!("This answer was not used. {what}."),
        },
    });
    (StatusCode::CONFLICT, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_forms_are_kept() {
        let withdrawn = Withdrawn::default();
        for n in 0..=KEPT {
            withdrawn.withdraw("s", json!(n), format!("form {n}"));
        }
        assert_eq!(withdrawn.what("s", &json!(0)), None, "the oldest is forgotten");
        assert_eq!(withdrawn.what("s", &json!(1)).as_deref(), Some("form 1"));
        assert_eq!(withdrawn.what("t", &json!(1)), None, "another session's");
        assert_eq!(withdrawn.what("s", &json!("1")), None, "ids differ by type");
    }
}
