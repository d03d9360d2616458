//! Which surface a request is for, by its path (and, for gRPC, its content
//! type), and how that surface says no: every refusal of the door, and
//! every unknown path or method, in the protocol's own shape. JSON-RPC
//! error objects (id null) on `/mcp` and `/a2a/jsonrpc`, `{"error": {...}}`
//! on `/ag-ui` and `/a2a/rest` (each in the shape its surface already
//! answers its own errors in), a gRPC status for gRPC and gRPC-Web, JSON
//! for the rest; 401 says `WWW-Authenticate: Bearer` with what to send in
//! its `error_description`.

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tonic::Code;
use tonic_types::{ErrorDetails, StatusExt};

use super::auth::Unauthenticated;

/// A surface, as the door tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// agentd.v1, A2A, health and reflection over gRPC.
    Grpc,
    /// The same services over gRPC-Web.
    GrpcWeb,
    /// `/mcp`.
    Mcp,
    /// `/a2a/jsonrpc`.
    A2aJsonRpc,
    /// `/a2a/rest/...`.
    A2aRest,
    /// `/ag-ui...`.
    AgUi,
    /// Everything else: the inbox's pages, the agent cards, unknown paths.
    Web,
}

/// Why the door refuses a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    Unauthenticated(Unauthenticated),
    /// `Host` names a host that is not allowed.
    ForeignHost,
    /// `Origin` names a page that may not call.
    ForeignOrigin,
    /// A JSON endpoint sent something else.
    UnsupportedMediaType,
    NotFound,
    MethodNotAllowed,
    /// The body is over `limits.max_request_bytes`.
    TooLarge,
    /// The body did not arrive within `limits.request_body_timeout`.
    BodyTimeout,
    /// The request cannot be read: its body broke off, it names no host.
    BadRequest,
}

/// A refusal: why, and what the client reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub why: Refused,
    pub message: String,
}

impl Refusal {
    pub fn new(why: Refused, message: impl Into<String>) -> Self {
        Self {
            why,
            message: message.into(),
        }
    }

    /// The HTTP status of the refusal.
    pub fn http_status(&self) -> StatusCode {
        match self.why {
            Refused::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Refused::ForeignHost | Refused::ForeignOrigin => StatusCode::FORBIDDEN,
            Refused::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Refused::NotFound => StatusCode::NOT_FOUND,
            Refused::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Refused::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refused::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Refused::BadRequest => StatusCode::BAD_REQUEST,
        }
    }

    /// The gRPC code of the refusal (a path no service has is
    /// UNIMPLEMENTED, as gRPC says it).
    pub fn grpc_code(&self) -> Code {
        match self.why {
            Refused::Unauthenticated(_) => Code::Unauthenticated,
            Refused::ForeignHost | Refused::ForeignOrigin => Code::PermissionDenied,
            Refused::UnsupportedMediaType => Code::InvalidArgument,
            Refused::NotFound | Refused::MethodNotAllowed => Code::Unimplemented,
            Refused::TooLarge => Code::ResourceExhausted,
            Refused::BodyTimeout => Code::DeadlineExceeded,
            Refused::BadRequest => Code::InvalidArgument,
        }
    }

    /// The refusal's code in the JSON shapes (`{"error": {"code": ...}}`).
    pub fn code(&self) -> &'static str {
        match self.why {
            Refused::Unauthenticated(_) => "unauthenticated",
            Refused::ForeignHost => "host_not_allowed",
            Refused::ForeignOrigin => "origin_not_allowed",
            Refused::UnsupportedMediaType => "unsupported_media_type",
            Refused::NotFound => "not_found",
            Refused::MethodNotAllowed => "method_not_allowed",
            Refused::TooLarge => "request_too_large",
            Refused::BodyTimeout => "request_timeout",
            Refused::BadRequest => "bad_request",
        }
    }

    /// The reason of the refusal's ErrorInfo (agentd's domain).
    pub fn reason(&self) -> &'static str {
        match &self.why {
            Refused::Unauthenticated(why) => why.reason,
            Refused::ForeignHost => "HOST_NOT_ALLOWED",
            Refused::ForeignOrigin => "ORIGIN_NOT_ALLOWED",
            Refused::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            Refused::NotFound => "NOT_FOUND",
            Refused::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Refused::TooLarge => "REQUEST_TOO_LARGE",
            Refused::BodyTimeout => "REQUEST_BODY_TIMEOUT",
            Refused::BadRequest => "BAD_REQUEST",
        }
    }

    /// The refusal as a gRPC status, its reason in an ErrorInfo.
    pub fn status(&self) -> tonic::Status {
        let details = ErrorDetails::with_error_info(self.reason(), "agentd.v1", []);
        tonic::Status::with_error_details(self.grpc_code(), self.message.clone(), details)
    }
}

impl From<Unauthenticated> for Refusal {
    fn from(why: Unauthenticated) -> Self {
        Self::new(Refused::Unauthenticated(why.clone()), why.message)
    }
}

impl Surface {
    /// The surface a request for `path` with these headers is for.
    pub fn of(path: &str, headers: &HeaderMap) -> Self {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let under = |prefix: &str| {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        if content_type.starts_with("application/grpc-web") {
            Self::GrpcWeb
        } else if content_type.starts_with("application/grpc") {
            Self::Grpc
        } else if under(crate::mcp::PATH) {
            Self::Mcp
        } else if under(crate::a2a::http::JSONRPC_PATH) {
            Self::A2aJsonRpc
        } else if under(crate::a2a::http::REST_PATH) {
            Self::A2aRest
        } else if under(crate::ag_ui::PATH) {
            Self::AgUi
        } else {
            Self::Web
        }
    }

    /// The surface's endpoints need a caller the door let in.
    pub fn authenticates(self) -> bool {
        matches!(self, Self::Mcp | Self::A2aJsonRpc | Self::A2aRest | Self::AgUi)
    }

    /// The surface reads JSON bodies (and nothing else).
    pub fn reads_json(self) -> bool {
        self.authenticates()
    }

    /// Refuses a `method` the surface does not answer (MCP's endpoint
    /// answers GET, POST and DELETE; the others are the router's).
    pub fn allows(self, method: &Method) -> Result<(), Refusal> {
        if self == Self::Mcp && ![Method::GET, Method::POST, Method::DELETE].contains(method) {
            return Err(Refusal::new(
                Refused::MethodNotAllowed,
                format!("{} answers GET, POST and DELETE, not {method}", crate::mcp::PATH),
            ));
        }
        Ok(())
    }

    /// The surface speaks gRPC (over HTTP/2, or as gRPC-Web).
    pub fn is_grpc(self) -> bool {
        matches!(self, Self::Grpc | Self::GrpcWeb)
    }

    /// `refusal`, as this surface says it.
    pub fn refuse(self, refusal: &Refusal) -> Response {
        let status = refusal.http_status();
        let mut response = match self {
            Self::Grpc | Self::GrpcWeb => {
                let (mut parts, ()) = refusal.status().into_http::<()>().into_parts();
                if self == Self::GrpcWeb {
                    parts.headers.insert(
                        header::CONTENT_TYPE,
                        HeaderValue::from_static("application/grpc-web+proto"),
                    );
                }
                return Response::from_parts(parts, axum::body::Body::empty());
            }
            Self::Mcp => {
                let body = json!({
                    "jsonrpc": "2.0",
                    "id": null,
                    "error": {
                        "code": -32600,
                        "message": refusal.message,
                        "data": {"reason": refusal.reason(), "status": status.as_u16()},
                    },
                });
                (status, axum::Json(body)).into_response()
            }
            Self::A2aJsonRpc | Self::A2aRest => crate::a2a::http::refusal(
                self == Self::A2aJsonRpc,
                status,
                refusal.grpc_code(),
                refusal.reason(),
                &refusal.message,
            ),
            Self::AgUi | Self::Web => {
                crate::ag_ui::ApiError::new(status, refusal.code(), refusal.message.clone()).into_response()
            }
        };
        if let Refused::Unauthenticated(why) = &refusal.why {
            let challenge = HeaderValue::from_str(&why.challenge())
                .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
            response.headers_mut().insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surfaces_by_path_and_content_type() {
        let none = HeaderMap::new();
        let mut grpc_web = HeaderMap::new();
        grpc_web.insert(
            header::CONTENT_TYPE,
            "application/grpc-web+proto".parse().unwrap(),
        );
        let mut grpc = HeaderMap::new();
        grpc.insert(header::CONTENT_TYPE, "application/grpc".parse().unwrap());
        assert_eq!(
            Surface::of("/agentd.v1.AgentService/ListRuns", &grpc),
            Surface::Grpc
        );
        assert_eq!(
            Surface::of("/agentd.v1.AgentService/ListRuns", &grpc_web),
            Surface::GrpcWeb
        );
        assert_eq!(Surface::of("/mcp", &none), Surface::Mcp);
        assert_eq!(Surface::of("/mcp/x", &none), Surface::Mcp);
        assert_eq!(Surface::of("/mcpx", &none), Surface::Web);
        assert_eq!(Surface::of("/a2a/jsonrpc", &none), Surface::A2aJsonRpc);
        assert_eq!(Surface::of("/a2a/rest/tasks", &none), Surface::A2aRest);
        assert_eq!(Surface::of("/ag-ui", &none), Surface::AgUi);
        assert_eq!(Surface::of("/ag-ui/assistant", &none), Surface::AgUi);
        assert_eq!(Surface::of("/", &none), Surface::Web);
        assert_eq!(Surface::of("/a2a", &none), Surface::Web);
    }
}
