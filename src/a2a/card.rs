//! The A2A agent cards: one per agent, served over plain HTTP on the gRPC
//! port, the default agent's at `/.well-known/agent-card.json` and every
//! agent's at `/agents/{agent_id}/.well-known/agent-card.json`. A card names
//! the JSON-RPC, HTTP+JSON and gRPC interfaces (this server at
//! `[server] public_url` when set, else as the request reached it, by an
//! allowed host name only, which the door checked: a request naming
//! another host cannot make a shared cache keep a card that points
//! elsewhere) with the agent's id as their A2A tenant, the agent's tools as skills, what it can
//! do, and the bearer scheme when API keys are configured. They are plain
//! HTTP routes ([`routes`]) beside the gRPC services.

use a2a_pb::proto;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use prost::Message;

use crate::agent::Agent;
use crate::door::{Refusal, Refused, ServerUrl, Surface};
use crate::runtime::Runtime;

/// The path of the default agent's card.
pub(crate) const DEFAULT_PATH: &str = "/.well-known/agent-card.json";

/// The name of the security scheme of API keys.
const BEARER: &str = "bearer";

/// The card of `agent`, reached at `url` (`http://host:port`).
pub(crate) fn card(agent: &Agent, url: &str, secured: bool) -> proto::AgentCard {
    let skills = agent
        .tool_specs()
        .map(|spec| proto::AgentSkill {
            id: spec.name.clone(),
            name: spec.name.clone(),
            description: spec.description.clone(),
            tags: vec![spec.source.to_owned()],
            ..Default::default()
        })
        .collect();
    let mut card = proto::AgentCard {
        name: agent.id.clone(),
        description: agent.description.clone(),
        supported_interfaces: interfaces(&agent.id, url),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: Some(proto::AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extensions: Vec::new(),
            extended_agent_card: Some(false),
        }),
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into(), "application/json".into()],
        skills,
        ..Default::default()
    };
    if secured {
        card.security_schemes.insert(
            BEARER.into(),
            proto::SecurityScheme {
                scheme: Some(proto::security_scheme::Scheme::HttpAuthSecurityScheme(
                    proto::HttpAuthSecurityScheme {
                        description: "an agentd API key, as `authorization: Bearer KEY`".into(),
                        scheme: "Bearer".into(),
                        bearer_format: String::new(),
                    },
                )),
            },
        );
        card.security_requirements.push(proto::SecurityRequirement {
            schemes: [(BEARER.to_owned(), proto::StringList::default())].into(),
        });
    }
    card
}

/// The interfaces of an agent reached at `url`: JSON-RPC first (the one
/// most clients speak first), then HTTP+JSON and gRPC, each with the
/// agent's id as its A2A tenant.
fn interfaces(agent_id: &str, url: &str) -> Vec<proto::AgentInterface> {
    [
        ("JSONRPC", format!("{url}{}", super::http::JSONRPC_PATH)),
        ("HTTP+JSON", format!("{url}{}", super::http::REST_PATH)),
        ("GRPC", url.to_owned()),
    ]
    .into_iter()
    .map(|(binding, url)| proto::AgentInterface {
        url,
        protocol_binding: binding.into(),
        tenant: agent_id.to_owned(),
        protocol_version: "1.0".into(),
    })
    .collect()
}

/// `card` in the A2A JSON form (proto3 JSON, as the specification's HTTP
/// bindings and SDKs read it).
pub(crate) fn json(card: &proto::AgentCard) -> String {
    let bytes = card.encode_to_vec();
    match a2a_pb::protojson::AgentCard::decode(bytes.as_slice()) {
        Ok(card) => serde_json::to_string_pretty(&card).unwrap_or_default(),
        // Both types come from one proto file: the bytes always decode.
        Err(error) => format!("{{\"error\": \"{error}\"}}"),
    }
}

/// What the routes read.
#[derive(Clone)]
struct Site {
    pub runtime: Runtime,
    /// API keys are required (the cards then name the bearer scheme).
    pub secured: bool,
}

/// The routes of every agent's card, served from `runtime`: `secured`
/// when API keys are required (the cards then name the bearer scheme).
pub(crate) fn routes(runtime: Runtime, secured: bool) -> axum::Router {
    let site = Site { runtime, secured };
    axum::Router::new()
        .route(DEFAULT_PATH, get(default_card))
        .route("/agents/{agent_id}/.well-known/agent-card.json", get(agent_card))
        .with_state(site)
}

async fn default_card(State(site): State<Site>, url: Option<Extension<ServerUrl>>) -> Response {
    card_of(&site, "", url)
}

async fn agent_card(
    State(site): State<Site>,
    Path(agent_id): Path<String>,
    url: Option<Extension<ServerUrl>>,
) -> Response {
    card_of(&site, &agent_id, url)
}

/// `agent_id`'s card (empty: the default agent's), naming this server at
/// `url` (which the door found for the request).
fn card_of(site: &Site, agent_id: &str, url: Option<Extension<ServerUrl>>) -> Response {
    let Some(agent) = site.runtime.agents().get(agent_id) else {
        let refusal = Refusal::new(Refused::NotFound, format!("no agent {agent_id:?}"));
        return Surface::Web.refuse(&refusal);
    };
    let Some(Extension(ServerUrl(url))) = url else {
        let refusal = Refusal::new(
            Refused::BadRequest,
            "a Host header is required (or set [server] public_url)",
        );
        return Surface::Web.refuse(&refusal);
    };
    let card = card(agent, &url, site.secured);
    ([(header::CONTENT_TYPE, "application/json")], json(&card)).into_response()
}
