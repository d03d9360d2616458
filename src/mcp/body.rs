//! What `/mcp` answers a POST whose body is no MCP message, in JSON-RPC's
//! own words, before rmcp reads it: rmcp answers a body it cannot read as
//! a message with 415 and plain text, and a known method whose params have
//! the wrong types with "Method not found" (its untagged request type falls
//! back to a custom method); it has no setting for either. So the body is
//! read here (after authentication), up to `limits.max_request_bytes`, and
//! checked:
//!
//! - not JSON: HTTP 400, `-32700` (id null); nested too deep for the JSON
//!   reader: 400, `-32600`;
//! - JSON but not a JSON-RPC message (not an object, a batch, no
//!   `"jsonrpc": "2.0"`, an id or method of the wrong type, a response
//!   without `result` or `error`): 400, `-32600`, with the id when one can
//!   be read;
//! - a call of a method this server serves whose params have the wrong
//!   shape: `-32602` naming the field (`params.name: invalid type ...`),
//!   HTTP 200 as MCP answers a well-formed call that fails;
//! - over the size limit: 413, `-32600` naming the limit.
//!
//! Anything else goes on to rmcp unchanged, with the bytes read and, for a
//! request (a method with an id), its id as a [`RequestId`] extension, for
//! the stream admission behind (`streams.rs`), and for a response the id
//! it answers as a [`ResponseId`], for the check of withdrawn forms
//! (`withdrawn.rs`). It never answers with a 5xx
//! or plain text; it changes nothing.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, InitializeRequestParams, PaginatedRequestParams,
};
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

/// JSON-RPC's error codes.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
const INVALID_PARAMS: i32 = -32602;

/// Why a body is refused: the HTTP status, and the JSON-RPC error.
#[derive(Debug, PartialEq)]
struct Refusal {
    status: StatusCode,
    /// The request's id, when it has one that can be read; else null.
    id: Value,
    code: i32,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, id: Value, code: i32, message: impl Into<String>) -> Self {
        Self {
            status,
            id,
            code,
            message: message.into(),
        }
    }

    /// Not JSON-RPC: 400, `-32600`.
    fn invalid_request(id: Value, why: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            id,
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        )
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message},
        });
        (self.status, axum::Json(body)).into_response()
    }
}

/// The id of the JSON-RPC request a POST carries (absent for a
/// notification or a response, which open no stream of their own).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct RequestId(pub Value);

/// The id a response (a client's answer to the server's request) answers.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct ResponseId(pub Value);

/// The middleware: a POST's body is read and checked, then passed on;
/// other methods pass as they are. `max_body` is
/// `limits.max_request_bytes`.
pub(super) async fn check(State(max_body): State<usize>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match read(body, max_body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal.into_response(),
    };
    match message(&bytes) {
        Ok(Some(Message::Request(id))) => {
            parts.extensions.insert(RequestId(id));
        }
        Ok(Some(Message::Response(id))) => {
            parts.extensions.insert(ResponseId(id));
        }
        Ok(None) => {}
        Err(refusal) => return refusal.into_response(),
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The body, at most `max` bytes of it.
async fn read(body: Body, max: usize) -> Result<Bytes, Refusal> {
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) if error.is::<LengthLimitError>() => Err(Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            Value::Null,
            INVALID_REQUEST,
            format!("Invalid Request: the body is larger than limits.max_request_bytes ({max} bytes)"),
        )),
        Err(error) => Err(Refusal::invalid_request(
            Value::Null,
            format!("the body could not be read: {error}"),
        )),
    }
}

/// A message with an id.
#[derive(Debug, PartialEq)]
enum Message {
    /// A request, by its id.
    Request(Value),
    /// A response, by the id it answers.
    Response(Value),
}

/// Checks that `body` is one JSON-RPC message rmcp can read, and that a
/// call of a method this server serves has params of the right shape; the
/// id of the request or response it is, if it is one.
fn message(body: &[u8]) -> Result<Option<Message>, Refusal> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        if error.to_string().starts_with("recursion limit exceeded") {
            Refusal::invalid_request(Value::Null, "the body nests deeper than 128 levels")
        } else {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: the body is not JSON: {error}"),
            )
        }
    })?;
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(Refusal::invalid_request(
                Value::Null,
                "a batch (an array) is not served: send one message per request",
            ))
        }
        _ => {
            return Err(Refusal::invalid_request(
                Value::Null,
                "a JSON-RPC message is an object",
            ))
        }
    };
    let id = envelope(object)?;
    let request = match (id, object.contains_key("method")) {
        (Some(id), true) => Some(Message::Request(id.clone())),
        (_, true) => None,
        // A response (the envelope has checked it has an id).
        (_, false) => Some(Message::Response(id_of(object))),
    };
    if let (Some(Value::String(method)), Some(id)) = (object.get("method"), id) {
        if let Err(why) = params_of(method, object.get("params")) {
            return Err(Refusal::new(
                StatusCode::OK,
                id.clone(),
                INVALID_PARAMS,
                format!("Invalid params: {why}"),
            ));
        }
    }
    let id = id_of(object);
    serde_json::from_value::<ClientJsonRpcMessage>(value)
        .map(|_| request)
        .map_err(|error| Refusal::invalid_request(id, error))
}

/// The id of a message, where it is a valid one; else null.
fn id_of(object: &Map<String, Value>) -> Value {
    match object.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// Checks the JSON-RPC envelope of a message: `"jsonrpc": "2.0"`; a
/// request or a notification names a method (a string) and a request an
/// id (a string or a number); a response has an id and one of `result`
/// and `error`. The id of a request, if it is one.
fn envelope(object: &Map<String, Value>) -> Result<Option<&Value>, Refusal> {
    let refuse = |why: &str| Refusal::invalid_request(id_of(object), why);
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(refuse("\"jsonrpc\" must be \"2.0\""));
    }
    let id = match object.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => return Err(refuse("\"id\" must be a string or a number")),
    };
    match (object.get("method"), id) {
        (Some(Value::String(_)), _) => Ok(id),
        (Some(_), _) => Err(refuse("\"method\" must be a string")),
        (None, None) => Err(refuse(
            "a message names a \"method\", or is a response with an \"id\"",
        )),
        (None, Some(_)) => match (object.get("result"), object.get("error")) {
            (Some(_), None) | (None, Some(_)) => Ok(None),
            _ => Err(refuse("a response has exactly one of \"result\" and \"error\"")),
        },
    }
}

/// Checks the params of a call of `method`, for the methods this server
/// serves with params (others are rmcp's to answer).
fn params_of(method: &str, params: Option<&Value>) -> Result<(), String> {
    match method {
        "initialize" => shaped::<InitializeRequestParams>(params),
        "tools/call" => shaped::<CallToolRequestParams>(params),
        "tools/list" if params.is_some_and(|params| !params.is_null()) => {
            shaped::<PaginatedRequestParams>(params)
        }
        _ => Ok(()),
    }
}

/// Whether `params` reads as `P`; else which field is wrong, and how.
fn shaped<P: DeserializeOwned>(params: Option<&Value>) -> Result<(), String> {
    let Some(params) = params.filter(|params| !params.is_null()) else {
        return Err("params are required".to_owned());
    };
    serde_path_to_error::deserialize::<_, P>(params)
        .map(drop)
        .map_err(|error| {
            let path = error.path().to_string();
            let inner = error.into_inner();
            match path.as_str() {
                "." | "" => format!("params: {inner}"),
                path => format!("params.{path}: {inner}"),
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> Refusal {
        message(body.as_bytes()).expect_err(body)
    }

    #[test]
    fn a_body_that_is_not_json_is_a_parse_error() {
        let refused = refusal("{not json");
        assert_eq!(
            (refused.status, refused.code, refused.id),
            (StatusCode::BAD_REQUEST, PARSE_ERROR, Value::Null)
        );
        assert!(refused.message.starts_with("Parse error"), "{}", refused.message);
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(refusal(&deep).code, INVALID_REQUEST);
    }

    #[test]
    fn json_that_is_not_json_rpc_is_an_invalid_request() {
        for body in [
            "[]",
            "3",
            r#"{"id": 1, "method": "ping"}"#,
            r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#,
            r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": 5}"#,
            r#"{"jsonrpc": "2.0"}"#,
            r#"{"jsonrpc": "2.0", "id": 1}"#,
        ] {
            let refused = refusal(body);
            assert_eq!(
                (refused.status, refused.code),
                (StatusCode::BAD_REQUEST, INVALID_REQUEST),
                "{body}"
            );
        }
        assert_eq!(
            refusal(r#"{"jsonrpc": "1.0", "id": 7, "method": "ping"}"#).id,
            json!(7)
        );
    }

    #[test]
    fn params_of_the_wrong_shape_are_invalid_params_naming_the_field() {
        let refused =
            refusal(r#"{"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": {"name": 3}}"#);
        assert_eq!(
            (refused.status, refused.code, refused.id),
            (StatusCode::OK, INVALID_PARAMS, json!("c1"))
        );
        assert!(
            refused.message.contains("params.name: invalid type"),
            "{}",
            refused.message
        );
        let refused = refusal(
            r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "x", "arguments": []}}"#,
        );
        assert!(
            refused.message.contains("params.arguments"),
            "{}",
            refused.message
        );
        let refused = refusal(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call"}"#);
        assert!(
            refused.message.contains("params are required"),
            "{}",
            refused.message
        );
        let refused =
            refusal(r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": 5}}"#);
        assert!(refused.message.contains("params.cursor"), "{}", refused.message);
    }

    #[test]
    fn a_request_and_a_response_are_known_by_their_id() {
        let id = |body: &str| message(body.as_bytes()).expect(body);
        assert_eq!(
            id(r#"{"jsonrpc": "2.0", "id": "a", "method": "ping"}"#),
            Some(Message::Request(json!("a")))
        );
        assert_eq!(
            id(r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#),
            None
        );
        assert_eq!(
            id(r#"{"jsonrpc": "2.0", "id": 1, "result": {}}"#),
            Some(Message::Response(json!(1)))
        );
    }

    #[test]
    fn messages_rmcp_can_read_pass() {
        for body in [
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a", "arguments": {"prompt": "x"}}}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#,
            r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": "unknown/method", "params": {}}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "result": {"action": "decline"}}"#,
            r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}"#,
        ] {
            assert!(message(body.as_bytes()).is_ok(), "{body}");
        }
    }
}
