//! agentd's agents as an MCP server: Streamable HTTP at `/mcp` on the
//! listen port (rmcp's `StreamableHttpService` on our axum router), each
//! agent a tool (`agents.rs`), a suspended run's question asked as an
//! elicitation (`question.rs`), the 2026-07-28 generation's
//! `requestState` sealed to the tenant (`state.rs`). Before any session a
//! request meets the same API keys as gRPC (401 without a valid one) and
//! the checks against DNS rebinding: a foreign `Origin` is 403 here, a
//! `Host` outside the allowed names is 403 in rmcp. It converts and
//! authorises; every operation is the runtime API's.

mod agents;
mod body;
mod follow;
mod question;
mod state;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use state::StateError;

use crate::config::AllowedOrigins;
use crate::grpc::{Authenticator, StreamGate};
use crate::runtime::Runtime;

/// The path of the endpoint.
pub const PATH: &str = "/mcp";

/// The `Host` names allowed when none are configured: loopback only.
pub const DEFAULT_ALLOWED_HOSTS: &str = "localhost,127.0.0.1,::1";

/// How the endpoint is set up.
#[derive(Clone, Debug)]
pub struct McpOptions {
    /// The key that seals `requestState`; `None`: a random one per process.
    pub state_key: Option<String>,
    /// The `Host` names (or `host:port`) requests may name; empty: any.
    pub allowed_hosts: Vec<String>,
}

impl Default for McpOptions {
    fn default() -> Self {
        Self {
            state_key: None,
            allowed_hosts: parse_hosts(DEFAULT_ALLOWED_HOSTS),
        }
    }
}

/// A comma-separated list of host names; `*` alone allows any.
pub fn parse_hosts(text: &str) -> Vec<String> {
    let hosts: Vec<String> = text
        .split(',')
        .map(str::trim)
        .filter(|host| !host.is_empty())
        .map(str::to_owned)
        .collect();
    if hosts == ["*"] {
        Vec::new()
    } else {
        hosts
    }
}

/// What the guard in front of the endpoint checks.
#[derive(Clone)]
struct Guard {
    authenticator: Authenticator,
    cors: Option<AllowedOrigins>,
}

/// The `/mcp` route, serving `runtime`'s agents to the callers
/// `authenticator` lets in, with pages of `cors` (besides this server's
/// own) allowed to call; each call is counted by `gate` (and refused once
/// the server drains); its sessions end when `stop` is cancelled.
pub fn routes(
    runtime: Runtime,
    authenticator: Authenticator,
    cors: Option<AllowedOrigins>,
    options: &McpOptions,
    gate: StreamGate,
    stop: CancellationToken,
) -> Result<axum::Router, StateError> {
    let seal = state::StateSeal::new(options.state_key.as_deref())?;
    let handler = agents::Agents::new(runtime.clone(), seal, gate);
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_max_request_body_bytes(runtime.limits().max_request_bytes)
        .with_cancellation_token(stop);
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let guard = Guard { authenticator, cors };
    let max_body = runtime.limits().max_request_bytes;
    Ok(axum::Router::new()
        .route_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(max_body, body::check))
        .layer(axum::middleware::from_fn_with_state(guard, check)))
}

/// Lets a request through with its caller's tenant, or refuses it: 403
/// for a foreign origin, 401 without a valid API key. A refusal does not
/// read the request's body, so it closes the connection (said so in the
/// response) rather than leave a client to reuse one the server may drop.
async fn check(State(guard): State<Guard>, mut request: Request, next: Next) -> Response {
    let refused = |mut response: Response| {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    };
    if !origin_allowed(request.headers(), guard.cors.as_ref()) {
        let message = "Forbidden: pages of this Origin may not call /mcp (see --cors-allow-origin)\n";
        return refused((StatusCode::FORBIDDEN, Body::from(message)).into_response());
    }
    let metadata = tonic::metadata::MetadataMap::from_headers(request.headers().clone());
    match guard.authenticator.identify(&metadata) {
        Ok(credential) => {
            let name = crate::grpc::caller::name_of(credential.as_ref(), request.extensions());
            let tenant = credential.map(|credential| credential.tenant).unwrap_or_default();
            request.extensions_mut().insert(tenant);
            request
                .extensions_mut()
                .insert(crate::grpc::caller::CallerName(name));
            next.run(request).await
        }
        Err(status) => {
            let mut response = (StatusCode::UNAUTHORIZED, format!("{}\n", status.message())).into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            refused(response)
        }
    }
}

/// A request with an `Origin` comes from a browser page: one served by
/// this server (the origin names the request's `Host`) or one of `cors`.
fn origin_allowed(headers: &HeaderMap, cors: Option<&AllowedOrigins>) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let origin = origin.to_str().unwrap_or_default();
    let host = headers.get(header::HOST).and_then(|host| host.to_str().ok());
    let same_origin = origin
        .split_once("://")
        .is_some_and(|(_, authority)| host.is_some_and(|host| host.eq_ignore_ascii_case(authority)));
    same_origin || cors.is_some_and(|cors| cors.allows(origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: &str, host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, origin.parse().unwrap());
        headers.insert(header::HOST, host.parse().unwrap());
        headers
    }

    #[test]
    fn origins_of_this_server_or_allowed_pages_pass() {
        assert!(origin_allowed(&HeaderMap::new(), None));
        assert!(origin_allowed(
            &headers("http://127.0.0.1:5000", "127.0.0.1:5000"),
            None
        ));
        assert!(!origin_allowed(
            &headers("http://evil.example", "127.0.0.1:5000"),
            None
        ));
        let cors = AllowedOrigins::parse_list("https://app.example.com").unwrap();
        assert!(origin_allowed(
            &headers("https://app.example.com", "127.0.0.1:5000"),
            Some(&cors)
        ));
        assert!(!origin_allowed(
            &headers("https://evil.example", "127.0.0.1:5000"),
            Some(&cors)
        ));
    }

    #[test]
    fn host_lists() {
        assert_eq!(parse_hosts("localhost, 127.0.0.1,"), ["localhost", "127.0.0.1"]);
        assert!(parse_hosts("*").is_empty());
    }
}
