//! agentd's agents as an MCP server: Streamable HTTP at `/mcp` on the
//! listen port (rmcp's `StreamableHttpService` on our axum router), each
//! agent a tool (`agents.rs`), a suspended run's question asked as an
//! elicitation (`question.rs`), the 2026-07-28 generation's
//! `requestState` sealed to the tenant (`state.rs`). The front door
//! (`door/`) has checked the caller, `Host` and `Origin` before a request
//! gets here; a session answers only the caller that opened it
//! (`sessions.rs`), a body that is no MCP message is refused in JSON-RPC's
//! words (`body.rs`), a late answer to a form withdrawn because its
//! question was answered elsewhere is refused in words (`withdrawn.rs`),
//! and each stream is admitted per tenant
//! (`streams.rs`). It converts and authorises; every operation is the
//! runtime API's. A host looking for OAuth finds, in OAuth's words, that
//! agentd takes API keys (`oauth.rs`).

mod agents;
mod body;
mod follow;
mod oauth;
mod question;
mod sessions;
mod state;
mod streams;
mod withdrawn;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub(crate) use oauth::SEND_THE_KEY;
pub(crate) use state::StateError;

use crate::door::StreamGate;
use crate::runtime::Runtime;

/// The path of the endpoint.
pub(crate) const PATH: &str = "/mcp";

/// How the endpoint is set up.
#[derive(Clone, Debug, Default)]
pub struct McpOptions {
    /// The key that seals `requestState`; `None`: a random one per process.
    pub state_key: Option<String>,
}

/// The `/mcp` route, serving `runtime`'s agents to the callers the door
/// lets in; each stream is admitted by `gate` (per tenant, and not once
/// the server drains; `streams.rs`); each session answers only the caller
/// that opened it (`sessions.rs`); its sessions end when `stop` is
/// cancelled.
pub(crate) fn routes(
    runtime: Runtime,
    options: &McpOptions,
    gate: StreamGate,
    stop: CancellationToken,
) -> Result<axum::Router, StateError> {
    let seal = state::StateSeal::new(options.state_key.as_deref())?;
    let withdrawn = withdrawn::Withdrawn::default();
    let handler = agents::Agents::new(runtime.clone(), seal, withdrawn.clone());
    let max_body = runtime.limits().max_request_bytes;
    // The door checks `Host` and `Origin` for every surface.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_max_request_body_bytes(runtime.limits().max_request_bytes)
        .with_cancellation_token(stop);
    let owners = sessions::Owners::default();
    let manager = sessions::OwnedSessions::new(LocalSessionManager::default(), owners.clone());
    let service = StreamableHttpService::new(move || Ok(handler.clone()), manager.into(), config);
    // Outermost first: the session's owner, the body's shape, the
    // answers to withdrawn forms, the stream.
    Ok(axum::Router::new()
        .route_service(PATH, service)
        .layer(axum::middleware::from_fn_with_state(gate, streams::admit))
        .layer(axum::middleware::from_fn_with_state(
            withdrawn,
            withdrawn::refuse_late,
        ))
        .layer(axum::middleware::from_fn_with_state(max_body, body::check))
        .layer(axum::middleware::from_fn_with_state(owners, sessions::bind))
        .merge(oauth::routes()))
}
