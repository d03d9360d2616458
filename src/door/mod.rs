//! The front door: what every surface shares, in one place, before any
//! surface runs. Who the caller is (`auth.rs`: API keys, the caller's
//! tenant and name, put in the request's extensions; gRPC's interceptor
//! asks the same [`Authenticator`]); and, for the HTTP surfaces (gRPC-Web,
//! `/ag-ui`, `/a2a/jsonrpc`, `/a2a/rest`, `/mcp`, the inbox, the agent
//! cards), one layer stack ([`Door::around`]) that refuses, before anything
//! runs and in the surface's own shape (`surface.rs`):
//!
//! - a `Host` that is not allowed (DNS rebinding), on every request a
//!   browser can make: all but plain gRPC over HTTP/2 (`hosts.rs`);
//! - an `Origin` that is neither this server's nor one of
//!   `cors_allow_origin`;
//! - a caller without a valid key, on the surfaces that need one, before
//!   its body is read;
//! - a body that is not JSON on a JSON endpoint (415: a page's `no-cors`
//!   request can only send `text/plain` and forms);
//! - a body over `limits.max_request_bytes` (413), or one that does not
//!   arrive within `limits.request_body_timeout` (408, `body.rs`);
//! - a path or method no surface has (404, 405).
//!
//! CORS answers preflights in front of it all. Past it, every surface's
//! streams go through one gate (`gate.rs`): admitted while the server
//! serves, capped per tenant (`limits.max_streams_per_tenant`,
//! `crate::tenant_slots`), ended at their deadline or when the drain is
//! over. It only admits: what a request does is the surfaces' business.

mod auth;
mod body;
mod gate;
mod hosts;
mod surface;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, Version};
use axum::middleware::Next;
use axum::response::Response;
use tower_http::cors::{AllowOrigin, CorsLayer};

pub use auth::{caller_name, tenant, Authenticator, CallerName, Unauthenticated};
pub use gate::{client_deadline, OpenStream, Phase, StreamGate, StreamRefused};
pub use hosts::AllowedHosts;
pub use surface::{Refusal, Refused, Surface};

use crate::config::{AllowedOrigins, PublicUrl};

/// The header a gRPC-Web caller names itself with; the inbox's calls send
/// `x-agentd-client: inbox`.
pub const CLIENT_HEADER: &str = "x-agentd-client";

/// The URL a request reached this server at, as the agent cards name it:
/// `public_url` when set, else the scheme and the (allowed) `Host` of the
/// request. Put in the extensions of every request that has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerUrl(pub String);

/// What the door checks, and against what.
#[derive(Clone, Debug)]
pub struct DoorSettings {
    pub authenticator: Authenticator,
    /// The `Host` names a browser's request may name.
    pub allowed_hosts: AllowedHosts,
    /// Where clients reach the server, when set.
    pub public_url: Option<PublicUrl>,
    /// Other origins whose pages may call; `None`: only this server's.
    pub cors: Option<AllowedOrigins>,
    /// The port speaks TLS.
    pub tls: bool,
    /// `limits.max_request_bytes`.
    pub max_body: usize,
    /// `limits.request_body_timeout`.
    pub body_timeout: Duration,
}

/// The front door. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Door(Arc<DoorSettings>);

impl Door {
    pub fn new(settings: DoorSettings) -> Self {
        Self(Arc::new(settings))
    }

    /// `routes` (every surface's, gRPC's included) behind the door: unknown
    /// paths and methods answered in their surface's shape, every request
    /// admitted or refused, CORS in front.
    pub fn around(&self, routes: axum::Router) -> axum::Router {
        let router = routes
            .fallback(not_found)
            .method_not_allowed_fallback(method_not_allowed)
            .layer(axum::middleware::from_fn_with_state(self.clone(), guard));
        match &self.0.cors {
            Some(origins) => router.layer(cors_layer(origins)),
            None => router,
        }
    }

    /// Lets `request` in, for `surface`, or says why not.
    async fn admit(&self, mut request: Request, surface: Surface) -> Result<Request, Refusal> {
        let settings = &*self.0;
        let host = host_of(&request);
        // Browsers cannot send plain gRPC (HTTP/2 without TLS, or a
        // content type no page may send without CORS): only what a
        // browser can send is held to `Host`.
        let browser_reachable = !(surface == Surface::Grpc && request.version() == Version::HTTP_2);
        if let Some(host) = host.as_deref().filter(|_| browser_reachable) {
            if !settings.allowed_hosts.allows(host) {
                return Err(Refusal::new(
                    Refused::ForeignHost,
                    format!(
                        "requests naming the host {host:?} are not answered (see [server] allowed_hosts)"
                    ),
                ));
            }
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("?");
            let (public, cors) = (settings.public_url.as_ref(), settings.cors.as_ref());
            if !hosts::origin_allowed(origin, host.as_deref(), public, cors) {
                return Err(Refusal::new(
                    Refused::ForeignOrigin,
                    format!("pages of {origin} may not call this server (see [server] cors_allow_origin)"),
                ));
            }
        }
        if let Some(url) = server_url(settings, host.as_deref()) {
            request.extensions_mut().insert(url);
        }
        if surface.authenticates() {
            let (mut parts, body) = request.into_parts();
            let authorization = parts
                .headers
                .get(header::AUTHORIZATION)
                .map(|value| value.as_bytes().to_vec());
            settings
                .authenticator
                .admit(authorization.as_deref(), &mut parts.extensions)?;
            request = Request::from_parts(parts, body);
        }
        surface.allows(request.method())?;
        if surface.reads_json() && !json_or_empty(&request) {
            return Err(Refusal::new(
                Refused::UnsupportedMediaType,
                "the body must be JSON: send `Content-Type: application/json`",
            ));
        }
        self.with_timed_body(request, surface).await
    }

    /// `request` with a body that arrives in time: read whole for a JSON
    /// surface, given the deadline for the others.
    async fn with_timed_body(&self, request: Request, surface: Surface) -> Result<Request, Refusal> {
        let (parts, body) = request.into_parts();
        let timeout = self.0.body_timeout;
        if http_body::Body::is_end_stream(&body) {
            return Ok(Request::from_parts(parts, body));
        }
        if !surface.reads_json() {
            return Ok(Request::from_parts(
                parts,
                Body::new(body::DeadlineBody::new(body, timeout)),
            ));
        }
        if content_length(&parts.headers).is_some_and(|length| length > self.0.max_body as u64) {
            return Err(body::too_large(self.0.max_body));
        }
        let bytes = body::read(body, self.0.max_body, timeout).await?;
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }
}

/// Admits a request, or refuses it in its surface's shape; a refusal
/// closes an HTTP/1 connection, whose body it did not read.
async fn guard(State(door): State<Door>, request: Request, next: Next) -> Response {
    let surface = Surface::of(request.uri().path(), request.headers());
    let http1 = request.version() < Version::HTTP_2;
    match door.admit(request, surface).await {
        Ok(request) => next.run(request).await,
        Err(refusal) => {
            let mut response = surface.refuse(&refusal);
            if http1 {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
    }
}

/// The host a request names: its `Host` header, else its URI's authority
/// (HTTP/2's `:authority`).
fn host_of(request: &Request) -> Option<String> {
    request
        .headers()
        .get(header::HOST)
        .map(|host| host.to_str().unwrap_or("?").to_owned())
        .or_else(|| request.uri().authority().map(ToString::to_string))
}

/// The URL the request reached this server at: `public_url`, else the
/// allowed host it names.
fn server_url(settings: &DoorSettings, host: Option<&str>) -> Option<ServerUrl> {
    if let Some(url) = &settings.public_url {
        return Some(ServerUrl(url.to_string()));
    }
    let host = host.filter(|host| settings.allowed_hosts.allows(host))?;
    let scheme = if settings.tls { "https" } else { "http" };
    Some(ServerUrl(format!("{scheme}://{host}")))
}

/// Whether a request's body is JSON, or there is none: a request that
/// sends one must say `application/json` (or a `+json` type).
fn json_or_empty<B: http_body::Body>(request: &Request<B>) -> bool {
    if request.headers().get_all(header::CONTENT_TYPE).iter().count() > 1 {
        return false;
    }
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok());
    match content_type {
        Some(content_type) => {
            let essence = content_type
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            essence == "application/json"
                || (essence.starts_with("application/")
                    && essence.ends_with("+json")
                    && essence.len() > "application/+json".len())
        }
        None => request.body().is_end_stream() || content_length(request.headers()) == Some(0),
    }
}

fn content_length(headers: &axum::http::HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
}

/// A request for no route, in its surface's shape (gRPC: UNIMPLEMENTED).
async fn not_found(request: Request) -> Response {
    let surface = Surface::of(request.uri().path(), request.headers());
    let message = match surface {
        Surface::Grpc | Surface::GrpcWeb => format!("no service at {}", request.uri().path()),
        Surface::Web => format!("{} is not here; the inbox is at /", request.uri().path()),
        _ => format!("{} is not here", request.uri().path()),
    };
    surface.refuse(&Refusal::new(Refused::NotFound, message))
}

/// A request whose path has no route for its method.
async fn method_not_allowed(request: Request) -> Response {
    let surface = Surface::of(request.uri().path(), request.headers());
    let message = format!("{} does not answer {}", request.uri().path(), request.method());
    surface.refuse(&Refusal::new(Refused::MethodNotAllowed, message))
}

/// Headers a page may send: a gRPC-Web call's own, its deadline, the API
/// key, the name of the client (the inbox's).
const ALLOWED_HEADERS: [HeaderName; 6] = [
    header::CONTENT_TYPE,
    header::AUTHORIZATION,
    HeaderName::from_static("x-grpc-web"),
    HeaderName::from_static("x-user-agent"),
    HeaderName::from_static("grpc-timeout"),
    HeaderName::from_static(CLIENT_HEADER),
];

/// Headers a page may read from a response: a call's status, which comes
/// in the headers when the call fails before any message.
const EXPOSED_HEADERS: [HeaderName; 3] = [
    HeaderName::from_static("grpc-status"),
    HeaderName::from_static("grpc-message"),
    HeaderName::from_static("grpc-status-details-bin"),
];

/// How long a browser may keep a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(2 * 60 * 60);

/// What CORS answers for `origins`: preflights of calls from them are
/// allowed, with the headers such a call sends and reads; any other
/// origin gets no `Access-Control-Allow-Origin`, so its browser refuses
/// the call.
fn cors_layer(origins: &AllowedOrigins) -> CorsLayer {
    let allow = match origins {
        AllowedOrigins::Any => AllowOrigin::any(),
        AllowedOrigins::List(_) => {
            let origins = origins.clone();
            AllowOrigin::predicate(move |origin: &HeaderValue, _| {
                origin.to_str().is_ok_and(|origin| origins.allows(origin))
            })
        }
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers(ALLOWED_HEADERS)
        .expose_headers(EXPOSED_HEADERS)
        .max_age(PREFLIGHT_MAX_AGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(content_type: Option<&str>, body: &'static str) -> Request {
        let mut builder = Request::post("/ag-ui");
        if let Some(content_type) = content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        builder.body(Body::from(body)).unwrap()
    }

    #[test]
    fn json_endpoints_take_json_or_nothing() {
        assert!(json_or_empty(&request(Some("application/json"), "{}")));
        assert!(json_or_empty(&request(
            Some("Application/JSON; charset=utf-8"),
            "{}"
        )));
        assert!(json_or_empty(&request(Some("application/a2a+json"), "{}")));
        assert!(json_or_empty(&request(None, "")));
        assert!(!json_or_empty(&request(Some("text/plain"), "{}")));
        assert!(!json_or_empty(&request(
            Some("application/x-www-form-urlencoded"),
            "a=1"
        )));
        assert!(!json_or_empty(&request(Some("+json"), "{}")));
        assert!(!json_or_empty(&request(None, "{}")));
    }
}
