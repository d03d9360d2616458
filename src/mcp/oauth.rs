//! What an MCP host finds where it looks for OAuth: agentd takes API keys,
//! not OAuth tokens, so a host that was refused with 401 and starts OAuth
//! discovery (RFC 9728's protected resource metadata, RFC 8414's
//! authorization server metadata, OpenID's configuration) or dynamic client
//! registration (RFC 7591) is answered, in OAuth's error shape
//! (`{"error", "error_description"}`), that there is no OAuth here and what
//! to send instead, rather than with a bare 404 a host shows as "Failed".

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::json;

/// What a caller without a key is told to send.
pub(crate) const SEND_THE_KEY: &str = "agentd takes an API key, not OAuth: send the header \
     Authorization: Bearer <API key> with one of the server's API keys";

/// The paths OAuth clients look at, each also under `/mcp` (RFC 9728 and
/// RFC 8414 insert the resource's path after the well-known name).
const PATHS: [&str; 9] = [
    "/.well-known/oauth-protected-resource",
    "/.well-known/oauth-protected-resource/mcp",
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/mcp",
    "/.well-known/openid-configuration",
    "/.well-known/openid-configuration/mcp",
    "/register",
    "/authorize",
    "/token",
];

/// The answer of every OAuth path: 404, saying why and what to send.
async fn no_oauth() -> Response {
    let body = json!({
        "error": "oauth_not_supported",
        "error_description": format!("This server offers no OAuth. {SEND_THE_KEY}."),
    });
    (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
}

/// The OAuth paths, each answered with [`no_oauth`].
pub(super) fn routes() -> axum::Router {
    PATHS.iter().fold(axum::Router::new(), |router, path| {
        router.route(path, any(no_oauth))
    })
}
