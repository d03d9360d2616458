//! `/mcp`'s streams in the stream gate. Each request that rmcp answers
//! with a stream of its own is admitted for its caller's tenant and holds
//! its slot until its response ends: a JSON-RPC request POSTed (its
//! response stream, which a tool call keeps open while its run goes on),
//! or a GET (the session's stream of the server's own messages).
//! Notifications and responses (an elicitation's answer among them) and
//! DELETE open none, and pass. A refusal comes before anything runs, as a
//! JSON-RPC error answering the request: HTTP 429 past the tenant's cap
//! (`limits.max_streams_per_tenant`), 503 while the server drains.

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ErrorCode;
use serde_json::{json, Value};

use super::body::RequestId;
use crate::domain::Tenant;
use crate::door::{StreamGate, StreamRefused};

/// Admits the request's stream, if it opens one, or refuses it. A POST's
/// body has been checked in front (`body.rs`), which says whether it is a
/// request, and its id.
pub(super) async fn admit(State(gate): State<StreamGate>, request: Request, next: Next) -> Response {
    let id = match *request.method() {
        Method::GET => Value::Null,
        Method::POST => match request.extensions().get::<RequestId>() {
            Some(RequestId(id)) => id.clone(),
            None => return next.run(request).await,
        },
        _ => return next.run(request).await,
    };
    let tenant = request.extensions().get::<Tenant>().cloned().unwrap_or_default();
    let open = match gate.admit(&tenant) {
        Ok(open) => open,
        Err(refused) => return refusal(id, &refused),
    };
    next.run(request)
        .await
        .map(|body| crate::held_body::hold(body, open))
}

/// The JSON-RPC error answering request `id` that the gate refused.
fn refusal(id: Value, refused: &StreamRefused) -> Response {
    let (status, data) = match refused {
        StreamRefused::Draining => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"reason": refused.reason()}),
        ),
        StreamRefused::TooManyStreams { max, .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"reason": refused.reason(), "limit": "max_streams_per_tenant", "max": max}),
        ),
    };
    error(
        status,
        &id,
        ErrorCode::INTERNAL_ERROR,
        refused.to_string(),
        Some(data),
    )
}

fn error(status: StatusCode, id: &Value, code: ErrorCode, message: String, data: Option<Value>) -> Response {
    let mut error = json!({"code": code.0, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    (status, axum::Json(body)).into_response()
}
