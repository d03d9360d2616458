//! The plain-HTTP routes served on the gRPC port beside the gRPC services:
//! the A2A agent cards (see `a2a/card.rs`). tonic's routes are an axum
//! router; these join it, and any other path is tonic's (`404` over HTTP,
//! `UNIMPLEMENTED` over gRPC).

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::a2a::card;
use crate::runtime::Runtime;

/// What the routes read.
#[derive(Clone)]
pub(super) struct Site {
    pub runtime: Runtime,
    /// API keys are required (the cards then name the bearer scheme).
    pub secured: bool,
    /// The port speaks TLS.
    pub tls: bool,
}

/// The routes, with their state.
pub(super) fn routes(site: Site) -> axum::Router {
    axum::Router::new()
        .route(card::DEFAULT_PATH, get(default_card))
        .route("/agents/{agent_id}/.well-known/agent-card.json", get(agent_card))
        .with_state(site)
}

async fn default_card(State(site): State<Site>, headers: HeaderMap) -> Response {
    card_of(&site, "", &headers)
}

async fn agent_card(State(site): State<Site>, Path(agent_id): Path<String>, headers: HeaderMap) -> Response {
    card_of(&site, &agent_id, &headers)
}

/// `agent_id`'s card (empty: the default agent's), naming this server as
/// the request reached it.
fn card_of(site: &Site, agent_id: &str, headers: &HeaderMap) -> Response {
    let Some(agent) = site.runtime.agents().get(agent_id) else {
        return (StatusCode::NOT_FOUND, format!("no agent {agent_id:?}\n")).into_response();
    };
    let Some(host) = headers.get(header::HOST).and_then(|host| host.to_str().ok()) else {
        return (StatusCode::BAD_REQUEST, "a Host header is required\n").into_response();
    };
    let scheme = if site.tls { "https" } else { "http" };
    let card = card::card(agent, &format!("{scheme}://{host}"), site.secured);
    ([(header::CONTENT_TYPE, "application/json")], card::json(&card)).into_response()
}
