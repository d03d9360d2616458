//! The JSON-RPC 2.0 binding (`POST /a2a/jsonrpc`) and the HTTP+JSON
//! binding (`/a2a/rest/...`) of A2A, on the port of gRPC, behind the same
//! API keys (the door lets a caller in before its body is read, and puts
//! who it is in the request's extensions). Both convert and nothing more: every method is the operation
//! of `mod.rs` that the gRPC binding calls, its messages in the proto's own
//! JSON mapping (`a2a-pb`'s `protojson` types), its errors as the
//! specification maps them per binding (`a2a-lf`'s codes and details).
//! Streams are server-sent events, one `data:` line per event.

use std::collections::HashMap;
use std::sync::Arc;

use a2a::{
    error_code, methods, A2AError, FieldViolation, JsonRpcId, JsonRpcRequest, JsonRpcResponse, TypedDetail,
};
use a2a_pb::{proto, protojson};
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use futures_util::StreamExt;
use prost::Message;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};
use tonic::metadata::MetadataMap;
use tonic::{Code, Status};
use tonic_types::StatusExt;

use super::{spec, A2aServiceImpl, Caller, Events, A2A_DOMAIN};

/// The path of the JSON-RPC binding.
pub(crate) const JSONRPC_PATH: &str = "/a2a/jsonrpc";
/// The base path of the HTTP+JSON binding.
pub(crate) const REST_PATH: &str = "/a2a/rest";
/// The header of the protocol version a request speaks.
const VERSION_HEADER: &str = "a2a-version";

#[derive(Clone)]
struct Site {
    service: Arc<A2aServiceImpl>,
}

/// The route of the JSON-RPC binding, calling `service` for the callers
/// the door lets in.
pub(crate) fn jsonrpc_routes(service: Arc<A2aServiceImpl>, max_body: usize) -> axum::Router {
    let routes = axum::Router::new().route(JSONRPC_PATH, post(jsonrpc));
    with_site(routes, service, max_body)
}

/// The routes of the HTTP+JSON binding, as [`jsonrpc_routes`].
pub(crate) fn rest_routes(service: Arc<A2aServiceImpl>, max_body: usize) -> axum::Router {
    let routes = axum::Router::new().route(&format!("{REST_PATH}/{{*path}}"), any(rest));
    with_site(routes, service, max_body)
}

fn with_site(routes: axum::Router<Site>, service: Arc<A2aServiceImpl>, max_body: usize) -> axum::Router {
    routes
        .with_state(Site { service })
        .layer(axum::extract::DefaultBodyLimit::max(max_body))
}

/// A refusal of the front door, before any method: `http` with a JSON-RPC
/// error object (id null) or, for HTTP+JSON, a `google.rpc.Status` body,
/// as [`Failure`] gives them; `code` and agentd's `reason` in its details.
pub(crate) fn refusal(jsonrpc: bool, http: StatusCode, code: Code, reason: &str, message: &str) -> Response {
    let failure = Failure::refused(code, http, reason, message);
    if jsonrpc {
        let body = JsonRpcResponse::error(JsonRpcId::Null, failure.jsonrpc());
        return (http, axum::Json(body)).into_response();
    }
    failure.rest()
}

/// A proto message and its twin in the proto's JSON mapping.
trait ProtoJson: prost::Message + Default + Sized {
    type Json: prost::Message + Default + Serialize + DeserializeOwned;
}

macro_rules! proto_json {
    ($($name:ident),* $(,)?) => {
        $(impl ProtoJson for proto::$name {
            type Json = protojson::$name;
        })*
    };
}

proto_json!(
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    GetTaskRequest,
    Task,
    ListTasksRequest,
    ListTasksResponse,
    CancelTaskRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    AgentCard,
);

/// `value` read as `T` by the proto's JSON mapping. Both types come from
/// one proto file, so the bytes decode, unless the request nests deeper
/// than protobuf allows: that is refused first, naming the field.
fn from_json<T: ProtoJson>(value: Value) -> Result<T, Failure> {
    if let Some(field) = super::depth::too_deep(&value, super::depth::MAX_DEPTH) {
        return Err(too_deep(field));
    }
    let json: T::Json = serde_json::from_value(value)
        .map_err(|error| Failure::new(Code::InvalidArgument, A2AError::invalid_params(error.to_string())))?;
    T::decode(json.encode_to_vec().as_slice()).map_err(|error| {
        Failure::new(
            Code::InvalidArgument,
            A2AError::invalid_params(format!("the request is not a valid message: {error}")),
        )
    })
}

/// Invalid params: `field` nests deeper than a request may.
fn too_deep(field: String) -> Failure {
    let max = super::depth::MAX_DEPTH;
    let message = format!("{field} nests deeper than a request may ({max} levels of objects and arrays)");
    let mut details = tonic_types::ErrorDetails::with_error_info(
        "NESTED_TOO_DEEP",
        "agentd.v1",
        HashMap::from([
            ("field".to_owned(), field.clone()),
            ("max_depth".to_owned(), max.to_string()),
        ]),
    );
    details.add_bad_request_violation(field, message.clone());
    Failure::of(Status::with_error_details(
        Code::InvalidArgument,
        message,
        details,
    ))
}

/// `message` in the proto's JSON mapping.
fn to_json<T: ProtoJson>(message: &T) -> Value {
    let json = T::Json::decode(message.encode_to_vec().as_slice()).unwrap_or_default();
    let mut value = serde_json::to_value(json).unwrap_or(Value::Null);
    utc_designator(&mut value);
    value
}

/// Timestamps with `Z`, as the proto3 JSON mapping writes them (the
/// serializer writes `+00:00`).
fn utc_designator(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(text) if key == "timestamp" => {
                        if let Some(prefix) = text.strip_suffix("+00:00") {
                            *text = format!("{prefix}Z");
                        }
                    }
                    _ => utc_designator(value),
                }
            }
        }
        Value::Array(values) => values.iter_mut().for_each(utc_designator),
        _ => {}
    }
}

/// A refusal: the gRPC code it would have (the HTTP status follows from
/// it), the A2A error (JSON-RPC code, message, details), and the ErrorInfo
/// HTTP+JSON gives (the A2A reason; agentd's where A2A has none, such as
/// an invalid API key).
struct Failure {
    code: Code,
    /// The HTTP status: the code's, unless the request's body says more
    /// (413 for one over the size limit).
    status: StatusCode,
    error: Box<A2AError>,
    info: Box<TypedDetail>,
}

impl Failure {
    fn new(code: Code, error: A2AError) -> Self {
        let info = TypedDetail::error_info(a2a::error_reason(error.code), A2A_DOMAIN, None);
        Self {
            code,
            status: http_status(code),
            error: Box::new(error),
            info: Box::new(info),
        }
    }

    /// A body that could not be read: over `limits.max_request_bytes`
    /// (413, RESOURCE_EXHAUSTED naming the limit), or cut off (400).
    fn unreadable(rejection: &BytesRejection, max_body: usize) -> Self {
        if rejection.status() != StatusCode::PAYLOAD_TOO_LARGE {
            let message = format!("the body could not be read: {}", rejection.body_text());
            return Self::new(Code::InvalidArgument, A2AError::invalid_request(message));
        }
        let message = format!("the body is larger than limits.max_request_bytes ({max_body} bytes)");
        let metadata = HashMap::from([
            ("limit".to_owned(), "max_request_bytes".to_owned()),
            ("max".to_owned(), max_body.to_string()),
        ]);
        let info = TypedDetail::error_info("REQUEST_TOO_LARGE", "agentd.v1", Some(metadata));
        let error = A2AError::invalid_request(message).with_details(vec![info.clone()]);
        Self {
            code: Code::ResourceExhausted,
            status: StatusCode::PAYLOAD_TOO_LARGE,
            error: Box::new(error),
            info: Box::new(info),
        }
    }

    /// A request the door refused: JSON-RPC's invalid request, agentd's
    /// `reason` in the metadata of its ErrorInfo (and the ErrorInfo of
    /// HTTP+JSON), as an invalid API key is said.
    fn refused(code: Code, status: StatusCode, reason: &str, message: &str) -> Self {
        let metadata = HashMap::from([("agentdReason".to_owned(), reason.to_owned())]);
        let invalid = error_code::INVALID_REQUEST;
        let details = vec![TypedDetail::error_info(
            a2a::error_reason(invalid),
            A2A_DOMAIN,
            Some(metadata),
        )];
        Self {
            code,
            status,
            error: Box::new(A2AError::new(invalid, message).with_details(details)),
            info: Box::new(TypedDetail::error_info(reason, "agentd.v1", Some(HashMap::new()))),
        }
    }

    /// `status` as the specification has the JSON bindings say it: its A2A
    /// reason (`INVALID_PARAMS` for every invalid request), its ErrorInfo
    /// and BadRequest details.
    fn of(status: Status) -> Self {
        let status = spec(status);
        let details = status.get_error_details();
        let info = details.error_info();
        let code = info
            .filter(|info| info.domain == A2A_DOMAIN)
            .and_then(|info| a2a::reason_to_error_code(&info.reason))
            .unwrap_or(match status.code() {
                Code::InvalidArgument | Code::NotFound | Code::OutOfRange => error_code::INVALID_PARAMS,
                Code::FailedPrecondition | Code::Unimplemented => error_code::UNSUPPORTED_OPERATION,
                Code::Unauthenticated | Code::PermissionDenied => error_code::INVALID_REQUEST,
                _ => error_code::INTERNAL_ERROR,
            });
        let mut typed = Vec::new();
        let rest_info = match info {
            Some(info) => {
                let mut metadata = info.metadata.clone();
                let rest_info = TypedDetail::error_info(&info.reason, &info.domain, Some(metadata.clone()));
                if info.domain != A2A_DOMAIN {
                    metadata.insert("agentdReason".into(), info.reason.clone());
                }
                // JSON-RPC's ErrorInfo says the reason of its code, with
                // these metadata.
                typed.push(TypedDetail::error_info(
                    a2a::error_reason(code),
                    A2A_DOMAIN,
                    Some(metadata),
                ));
                rest_info
            }
            None => TypedDetail::error_info(a2a::error_reason(code), A2A_DOMAIN, None),
        };
        if let Some(bad_request) = details.bad_request() {
            let violations = bad_request
                .field_violations
                .iter()
                .map(|violation| FieldViolation {
                    field: violation.field.clone(),
                    description: violation.description.clone(),
                })
                .collect();
            typed.push(TypedDetail::bad_request(violations));
        }
        Self {
            code: status.code(),
            status: http_status(status.code()),
            error: Box::new(A2AError::new(code, status.message()).with_details(typed)),
            info: Box::new(rest_info),
        }
    }

    /// The JSON-RPC error object: the ErrorInfo last in `data`.
    fn jsonrpc(&self) -> a2a::JsonRpcError {
        self.error.to_jsonrpc_error()
    }

    /// The HTTP+JSON answer: the HTTP status, and a `google.rpc.Status`
    /// body, its ErrorInfo last in `details`.
    fn rest_body(&self) -> Value {
        let details: Vec<&TypedDetail> = self
            .error
            .details
            .iter()
            .flatten()
            .filter(|detail| detail.type_url != a2a::ERROR_INFO_TYPE)
            .chain([&*self.info])
            .collect();
        json!({"error": {
            "code": self.status.as_u16(),
            "status": code_name(self.code),
            "message": self.error.message,
            "details": details,
        }})
    }

    fn rest(&self) -> Response {
        (self.status, axum::Json(self.rest_body())).into_response()
    }
}

/// The HTTP status of a gRPC code (google.rpc's mapping).
fn http_status(code: Code) -> StatusCode {
    match code {
        Code::Ok => StatusCode::OK,
        Code::InvalidArgument | Code::FailedPrecondition | Code::OutOfRange => StatusCode::BAD_REQUEST,
        Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        Code::PermissionDenied => StatusCode::FORBIDDEN,
        Code::NotFound => StatusCode::NOT_FOUND,
        Code::AlreadyExists | Code::Aborted => StatusCode::CONFLICT,
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
        Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
        Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
        Code::Cancelled | Code::Unknown | Code::Internal | Code::DataLoss => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

/// A gRPC code's name, as `google.rpc.Status` JSON spells it.
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}

/// The caller of a request: the tenant and name the door let it in as,
/// its trace; refused without a version of A2A this server speaks (1.x; a
/// request without `A2A-Version` speaks 0.3, which it does not).
fn caller(headers: &HeaderMap, extensions: &axum::http::Extensions) -> Result<Caller, Failure> {
    let metadata = MetadataMap::from_headers(headers.clone());
    let said = headers
        .get(VERSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|version| !version.is_empty());
    let version = said.unwrap_or("0.3");
    if version.split('.').next() != Some("1") {
        let message = match said {
            Some(version) => format!("A2A version {version} is not served: send `A2A-Version: 1.0`"),
            None => {
                "a request without `A2A-Version` speaks A2A 0.3, which is not served: send `A2A-Version: 1.0`"
                    .to_owned()
            }
        };
        return Err(Failure::new(
            Code::FailedPrecondition,
            A2AError::new(error_code::VERSION_NOT_SUPPORTED, message),
        ));
    }
    Ok(Caller {
        tenant: crate::door::tenant(extensions),
        name: crate::door::caller_name(extensions),
        trace: crate::grpc::convert::trace_context(&metadata),
    })
}

/// A server-sent event stream of `events`, each written by `write`.
fn event_stream(
    events: Events,
    write: impl Fn(Result<proto::StreamResponse, Status>) -> String + Send + 'static,
) -> Response {
    let body = events.map(move |event| Ok::<_, std::convert::Infallible>(Bytes::from(write(event))));
    let mut response = (StatusCode::OK, Body::from_stream(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

// ---- JSON-RPC ----

/// What a JSON-RPC method answers: a result, or a stream of them.
enum Answer {
    Result(Value),
    Stream(Events),
}

async fn jsonrpc(
    State(site): State<Site>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let max_body = site.service.runtime.limits().max_request_bytes;
            return not_jsonrpc(JsonRpcId::Null, &Failure::unreadable(&rejection, max_body));
        }
    };
    let request: JsonRpcRequest = match serde_json::from_slice::<Value>(&body) {
        Err(error) => {
            return not_jsonrpc(
                JsonRpcId::Null,
                &Failure::new(Code::InvalidArgument, A2AError::parse_error(error.to_string())),
            );
        }
        Ok(value) => {
            let id = value
                .get("id")
                .and_then(|id| serde_json::from_value(id.clone()).ok())
                .unwrap_or(JsonRpcId::Null);
            match serde_json::from_value::<JsonRpcRequest>(value) {
                Ok(request) if request.jsonrpc == "2.0" => request,
                Ok(_) => {
                    return not_jsonrpc(
                        id,
                        &Failure::new(
                            Code::InvalidArgument,
                            A2AError::invalid_request("jsonrpc must be \"2.0\""),
                        ),
                    );
                }
                Err(error) => {
                    return not_jsonrpc(
                        id,
                        &Failure::new(
                            Code::InvalidArgument,
                            A2AError::invalid_request(error.to_string()),
                        ),
                    );
                }
            }
        }
    };
    let id = request.id.clone();
    let answer = match caller(&headers, &extensions) {
        Ok(caller) => {
            call(
                &site.service,
                &caller,
                &request.method,
                request.params.unwrap_or_else(|| json!({})),
            )
            .await
        }
        Err(failure) => Err(failure),
    };
    match answer {
        Ok(Answer::Result(result)) => axum::Json(JsonRpcResponse::success(id, result)).into_response(),
        Ok(Answer::Stream(events)) => event_stream(events, move |event| {
            let response = match event {
                Ok(event) => JsonRpcResponse::success(id.clone(), to_json(&event)),
                Err(status) => JsonRpcResponse::error(id.clone(), Failure::of(status).jsonrpc()),
            };
            format!(
                "data: {}\n\n",
                serde_json::to_string(&response).unwrap_or_default()
            )
        }),
        Err(failure) => jsonrpc_error(id, &failure),
    }
}

/// A JSON-RPC error: the error object in the body, with HTTP 200, or 429
/// for a limit the caller is over (its open streams, its executing runs),
/// which HTTP clients know to back off from.
fn jsonrpc_error(id: JsonRpcId, failure: &Failure) -> Response {
    let status = match failure.code {
        Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
        _ => StatusCode::OK,
    };
    (status, axum::Json(JsonRpcResponse::error(id, failure.jsonrpc()))).into_response()
}

/// A JSON-RPC error for a body that is no JSON-RPC call (not JSON, not a
/// request object, too large): an HTTP error status (400, or 413), the
/// error object in the body.
fn not_jsonrpc(id: JsonRpcId, failure: &Failure) -> Response {
    let status = match failure.status {
        StatusCode::PAYLOAD_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    (status, axum::Json(JsonRpcResponse::error(id, failure.jsonrpc()))).into_response()
}

/// The JSON-RPC method `method` with `params`.
async fn call(
    service: &A2aServiceImpl,
    caller: &Caller,
    method: &str,
    params: Value,
) -> Result<Answer, Failure> {
    let result = |outcome: Result<Value, Status>| outcome.map(Answer::Result).map_err(Failure::of);
    match method {
        methods::SEND_MESSAGE => {
            let request = from_json(params)?;
            result(
                service
                    .send_message_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        methods::SEND_STREAMING_MESSAGE => {
            let request = from_json(params)?;
            service
                .send_streaming_message_as(caller, request)
                .await
                .map(Answer::Stream)
                .map_err(Failure::of)
        }
        methods::GET_TASK => {
            let request = from_json(params)?;
            result(service.get_task_as(caller, request).await.map(|r| to_json(&r)))
        }
        methods::LIST_TASKS => {
            let request = from_json(params)?;
            result(service.list_tasks_as(caller, request).await.map(|r| to_json(&r)))
        }
        methods::CANCEL_TASK => {
            let request = from_json(params)?;
            result(service.cancel_task_as(caller, request).await.map(|r| to_json(&r)))
        }
        methods::SUBSCRIBE_TO_TASK => {
            let request = from_json(params)?;
            service
                .subscribe_to_task_as(caller, request)
                .await
                .map(Answer::Stream)
                .map_err(Failure::of)
        }
        methods::CREATE_PUSH_CONFIG => {
            let request = from_json(params)?;
            result(
                service
                    .create_push_config_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        methods::GET_PUSH_CONFIG => {
            let request = from_json(params)?;
            result(
                service
                    .get_push_config_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        methods::LIST_PUSH_CONFIGS => {
            let request = from_json(params)?;
            result(
                service
                    .list_push_configs_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        methods::DELETE_PUSH_CONFIG => {
            let request = from_json(params)?;
            result(
                service
                    .delete_push_config_as(caller, request)
                    .await
                    .map(|()| json!({})),
            )
        }
        methods::GET_EXTENDED_AGENT_CARD => {
            let _: proto::GetExtendedAgentCardRequest = from_json(params)?;
            result(service.extended_agent_card_as().map(|r| to_json(&r)))
        }
        other => Err(Failure::new(Code::NotFound, A2AError::method_not_found(other))),
    }
}

// ---- HTTP+JSON ----

/// An HTTP+JSON operation, as its method and path name it.
#[derive(Debug, PartialEq)]
enum Operation {
    Send,
    Stream,
    ListTasks,
    GetTask(String),
    Cancel(String),
    Subscribe(String),
    CreatePush(String),
    ListPush(String),
    GetPush(String, String),
    DeletePush(String, String),
    ExtendedCard,
}

/// The operation of `method` on `path` (below [`REST_PATH`], without its
/// tenant).
fn operation(method: &Method, path: &[&str]) -> Option<Operation> {
    let task = |segment: &str, verb: &str| segment.strip_suffix(verb).map(str::to_owned);
    Some(match (method.as_str(), path) {
        ("POST", ["message:send"]) => Operation::Send,
        ("POST", ["message:stream"]) => Operation::Stream,
        ("GET", ["tasks"]) => Operation::ListTasks,
        ("GET", ["extendedAgentCard"]) => Operation::ExtendedCard,
        ("POST", ["tasks", id]) if id.ends_with(":cancel") => Operation::Cancel(task(id, ":cancel")?),
        ("POST" | "GET", ["tasks", id]) if id.ends_with(":subscribe") => {
            Operation::Subscribe(task(id, ":subscribe")?)
        }
        ("GET", ["tasks", id]) => Operation::GetTask((*id).to_owned()),
        ("POST", ["tasks", id, "pushNotificationConfigs"]) => Operation::CreatePush((*id).to_owned()),
        ("GET", ["tasks", id, "pushNotificationConfigs"]) => Operation::ListPush((*id).to_owned()),
        ("GET", ["tasks", id, "pushNotificationConfigs", config]) => {
            Operation::GetPush((*id).to_owned(), (*config).to_owned())
        }
        ("DELETE", ["tasks", id, "pushNotificationConfigs", config]) => {
            Operation::DeletePush((*id).to_owned(), (*config).to_owned())
        }
        _ => return None,
    })
}

/// The operation and A2A tenant of a path: the tenant, when there is one,
/// is its first segment.
fn route(method: &Method, path: &str) -> Option<(String, Operation)> {
    let segments: Vec<&str> = path.split('/').filter(|segment| !segment.is_empty()).collect();
    if let Some(operation) = operation(method, &segments) {
        return Some((String::new(), operation));
    }
    let (tenant, rest) = segments.split_first()?;
    operation(method, rest).map(|operation| ((*tenant).to_owned(), operation))
}

async fn rest(
    State(site): State<Site>,
    method: Method,
    Path(path): Path<String>,
    uri: Uri,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(body) => body,
        Err(rejection) => {
            let max_body = site.service.runtime.limits().max_request_bytes;
            return Failure::unreadable(&rejection, max_body).rest();
        }
    };
    let Some((tenant, operation)) = route(&method, &path) else {
        let failure = Failure::new(
            Code::NotFound,
            A2AError::method_not_found(&format!("{method} {REST_PATH}/{path}")),
        );
        return failure.rest();
    };
    let caller = match caller(&headers, &extensions) {
        Ok(caller) => caller,
        Err(failure) => return failure.rest(),
    };
    let query = form_urlencoded::parse(uri.query().unwrap_or_default().as_bytes())
        .into_owned()
        .collect();
    match rest_call(&site.service, &caller, operation, tenant, query, &body).await {
        Ok(Answer::Result(result)) => axum::Json(result).into_response(),
        Ok(Answer::Stream(events)) => event_stream(events, |event| match event {
            Ok(event) => format!("data: {}\n\n", to_json(&event)),
            Err(status) => format!("event: error\ndata: {}\n\n", Failure::of(status).rest_body()),
        }),
        Err(failure) => failure.rest(),
    }
}

/// The request of an operation: the body's fields (the query's, for a
/// GET or DELETE), and those the path names.
fn request_json(
    body: &[u8],
    query: HashMap<String, String>,
    path: &[(&str, &str)],
) -> Result<Value, Failure> {
    let mut fields = if body.iter().all(u8::is_ascii_whitespace) {
        // Query parameters are strings; the JSON mapping reads numbers from
        // strings, but not booleans.
        query
            .into_iter()
            .map(|(key, value)| {
                let value = match value.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => Value::String(value),
                };
                (key, value)
            })
            .collect::<Map<String, Value>>()
    } else {
        match serde_json::from_slice(body) {
            Ok(Value::Object(fields)) => fields,
            Ok(_) => {
                return Err(Failure::new(
                    Code::InvalidArgument,
                    A2AError::invalid_request("the body must be a JSON object"),
                ))
            }
            Err(error) => {
                return Err(Failure::new(
                    Code::InvalidArgument,
                    A2AError::parse_error(error.to_string()),
                ))
            }
        }
    };
    for (key, value) in path {
        if !value.is_empty() {
            fields.insert((*key).to_owned(), Value::String((*value).to_owned()));
        }
    }
    Ok(Value::Object(fields))
}

async fn rest_call(
    service: &A2aServiceImpl,
    caller: &Caller,
    operation: Operation,
    tenant: String,
    query: HashMap<String, String>,
    body: &[u8],
) -> Result<Answer, Failure> {
    let tenant = tenant.as_str();
    let result = |outcome: Result<Value, Status>| outcome.map(Answer::Result).map_err(Failure::of);
    match operation {
        Operation::Send => {
            let request = from_json(request_json(body, query, &[("tenant", tenant)])?)?;
            result(
                service
                    .send_message_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        Operation::Stream => {
            let request = from_json(request_json(body, query, &[("tenant", tenant)])?)?;
            service
                .send_streaming_message_as(caller, request)
                .await
                .map(Answer::Stream)
                .map_err(Failure::of)
        }
        Operation::ListTasks => {
            let request = from_json(request_json(body, query, &[("tenant", tenant)])?)?;
            result(service.list_tasks_as(caller, request).await.map(|r| to_json(&r)))
        }
        Operation::GetTask(id) => {
            let request = from_json(request_json(body, query, &[("tenant", tenant), ("id", &id)])?)?;
            result(service.get_task_as(caller, request).await.map(|r| to_json(&r)))
        }
        Operation::Cancel(id) => {
            let request = from_json(request_json(body, query, &[("tenant", tenant), ("id", &id)])?)?;
            result(service.cancel_task_as(caller, request).await.map(|r| to_json(&r)))
        }
        Operation::Subscribe(id) => {
            let request = from_json(request_json(body, query, &[("tenant", tenant), ("id", &id)])?)?;
            service
                .subscribe_to_task_as(caller, request)
                .await
                .map(Answer::Stream)
                .map_err(Failure::of)
        }
        Operation::CreatePush(task_id) => {
            let fields = [("tenant", tenant), ("taskId", task_id.as_str())];
            let request = from_json(request_json(body, query, &fields)?)?;
            result(
                service
                    .create_push_config_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        Operation::ListPush(task_id) => {
            let fields = [("tenant", tenant), ("taskId", task_id.as_str())];
            let request = from_json(request_json(body, query, &fields)?)?;
            result(
                service
                    .list_push_configs_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        Operation::GetPush(task_id, id) => {
            let fields = [
                ("tenant", tenant),
                ("taskId", task_id.as_str()),
                ("id", id.as_str()),
            ];
            let request = from_json(request_json(body, query, &fields)?)?;
            result(
                service
                    .get_push_config_as(caller, request)
                    .await
                    .map(|r| to_json(&r)),
            )
        }
        Operation::DeletePush(task_id, id) => {
            let fields = [
                ("tenant", tenant),
                ("taskId", task_id.as_str()),
                ("id", id.as_str()),
            ];
            let request: proto::DeleteTaskPushNotificationConfigRequest =
                from_json(request_json(body, query, &fields)?)?;
            result(
                service
                    .delete_push_config_as(caller, request)
                    .await
                    .map(|()| json!({})),
            )
        }
        Operation::ExtendedCard => result(service.extended_agent_card_as().map(|r| to_json(&r))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_paths() {
        let post = Method::POST;
        assert_eq!(
            route(&post, "message:send"),
            Some((String::new(), Operation::Send))
        );
        assert_eq!(
            route(&post, "assistant/message:stream"),
            Some(("assistant".into(), Operation::Stream))
        );
        assert_eq!(
            route(&post, "assistant/tasks/abc:cancel"),
            Some(("assistant".into(), Operation::Cancel("abc".into())))
        );
        assert_eq!(
            route(&Method::GET, "tasks/abc/pushNotificationConfigs/x"),
            Some((String::new(), Operation::GetPush("abc".into(), "x".into())))
        );
        assert_eq!(
            route(&Method::DELETE, "a/tasks/abc/pushNotificationConfigs/x"),
            Some(("a".into(), Operation::DeletePush("abc".into(), "x".into())))
        );
        assert_eq!(route(&Method::GET, "a/b/message:send"), None);
        assert_eq!(route(&Method::PUT, "tasks"), None);
    }

    #[test]
    fn invalid_requests_are_invalid_params_with_their_details() {
        let status: Status = crate::grpc::convert::invalid("message.parts", "a text part").into();
        let failure = Failure::of(status);
        assert_eq!(failure.error.code, error_code::INVALID_PARAMS);
        let body = failure.rest_body();
        assert_eq!(body["error"]["code"], 400);
        let details = body["error"]["details"].as_array().expect("details");
        let info = details.last().expect("an ErrorInfo");
        assert_eq!(info["reason"], "INVALID_PARAMS");
        assert_eq!(info["domain"], A2A_DOMAIN);
        assert!(details
            .iter()
            .any(|detail| detail["fieldViolations"][0]["field"] == "message.parts"));
    }

    #[test]
    fn a_request_nested_too_deep_is_invalid_params_naming_the_field() {
        let nested = |levels: usize| (0..levels).fold(json!({}), |inner, _| json!({ "a": inner }));
        let request = |levels| {
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                               "metadata": nested(levels)}})
        };
        let deepest = super::super::depth::MAX_DEPTH - 3;
        let decoded: proto::SendMessageRequest = from_json(request(deepest))
            .unwrap_or_else(|failure| panic!("the deepest allowed decodes: {}", failure.error.message));
        assert!(decoded.message.is_some());
        for levels in [deepest + 1, 40, 90] {
            let Err(failure) = from_json::<proto::SendMessageRequest>(request(levels)) else {
                panic!("{levels} levels are too deep");
            };
            assert_eq!(failure.code, Code::InvalidArgument);
            assert_eq!(failure.error.code, error_code::INVALID_PARAMS);
            assert!(
                failure.error.message.starts_with("message.metadata nests deeper"),
                "{}",
                failure.error.message
            );
            let body = failure.rest_body();
            assert_eq!(body["error"]["code"], 400);
            assert!(body["error"]["details"]
                .as_array()
                .unwrap()
                .iter()
                .any(|detail| detail["fieldViolations"][0]["field"] == "message.metadata"));
        }
    }

    #[test]
    fn timestamps_say_utc_with_z() {
        let mut value = json!({"status": {"timestamp": "2026-01-01T00:00:00+00:00"}, "text": "a+00:00"});
        utc_designator(&mut value);
        assert_eq!(value["status"]["timestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(value["text"], "a+00:00");
    }
}
