//! `/mcp`'s streams in the stream gate. Each request that rmcp answers
//! with a stream of its own is admitted for its caller's tenant and holds
//! its slot until its response ends: a JSON-RPC request POSTed (its
//! response stream, which a tool call keeps open while its run goes on),
//! or a GET (the session's stream of the server's own messages).
//! Notifications and responses (an elicitation's answer among them) and
//! DELETE open none, and pass. A refusal comes before anything runs, as a
//! JSON-RPC error answering the request: HTTP 429 past the tenant's cap
//! (`limits.max_streams_per_tenant`), 503 while the server drains.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ErrorCode;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::domain::Tenant;
use crate::grpc::{Refused, StreamGate};

/// What the admission needs.
#[derive(Clone)]
pub(super) struct Admission {
    pub gate: StreamGate,
    /// The most bytes a request body may have (`limits.max_request_bytes`).
    pub max_body: usize,
}

/// What a POSTed message says about itself: a request has both.
#[derive(Deserialize)]
struct Envelope {
    id: Option<Value>,
    method: Option<String>,
}

/// Admits the request's stream, if it opens one, or refuses it.
pub(super) async fn admit(State(admission): State<Admission>, request: Request, next: Next) -> Response {
    let (request, id) = match *request.method() {
        Method::GET => (request, Value::Null),
        Method::POST => match read(request, admission.max_body).await {
            Ok((request, Some(id))) => (request, id),
            Ok((request, None)) => return next.run(request).await,
            Err(refusal) => return refusal,
        },
        _ => return next.run(request).await,
    };
    let tenant = request.extensions().get::<Tenant>().cloned().unwrap_or_default();
    let open = match admission.gate.admit(&tenant) {
        Ok(open) => open,
        Err(refused) => return refusal(id, &refused),
    };
    next.run(request)
        .await
        .map(|body| crate::held_body::hold(body, open))
}

/// The request with its body read, and the id of the JSON-RPC request it
/// carries (`None` for anything else, which rmcp judges).
async fn read(request: Request, max_body: usize) -> Result<(Request, Option<Value>), Response> {
    let (parts, body) = request.into_parts();
    let bytes: Bytes = axum::body::to_bytes(body, max_body).await.map_err(|_| {
        let message = format!(
            "the request body is over the limit of {max_body} bytes (limits.max_request_bytes), \
             or could not be read"
        );
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &Value::Null,
            ErrorCode::INVALID_REQUEST,
            message,
            None,
        )
    })?;
    let id = match serde_json::from_slice::<Envelope>(&bytes) {
        Ok(Envelope {
            id: Some(id),
            method: Some(_),
        }) if !id.is_null() => Some(id),
        _ => None,
    };
    Ok((Request::from_parts(parts, Body::from(bytes)), id))
}

/// The JSON-RPC error answering request `id` that the gate refused.
fn refusal(id: Value, refused: &Refused) -> Response {
    let (status, data) = match refused {
        Refused::Draining => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"reason": refused.reason()}),
        ),
        Refused::TooManyStreams { max, .. } => (
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
