//! The A2A agent cards: one per agent, served over plain HTTP on the gRPC
//! port, the default agent's at `/.well-known/agent-card.json` and every
//! agent's at `/agents/{agent_id}/.well-known/agent-card.json`. A card names
//! the gRPC interface (this server, as the request reached it) with the
//! agent's id as its A2A tenant, the agent's tools as skills, what it can
//! do, and the bearer scheme when API keys are configured.

use a2a_pb::proto;
use prost::Message;

use crate::agent::Agent;

/// The path of `agent_id`'s card.
pub fn path_of(agent_id: &str) -> String {
    format!("/agents/{agent_id}/.well-known/agent-card.json")
}

/// The path of the default agent's card.
pub const DEFAULT_PATH: &str = "/.well-known/agent-card.json";

/// The name of the security scheme of API keys.
const BEARER: &str = "bearer";

/// The card of `agent`, reached at `url` (`http://host:port`).
pub fn card(agent: &Agent, url: &str, secured: bool) -> proto::AgentCard {
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
        supported_interfaces: vec![proto::AgentInterface {
            url: url.to_owned(),
            protocol_binding: "GRPC".into(),
            tenant: agent.id.clone(),
            protocol_version: "1.0".into(),
        }],
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

/// `card` in the A2A JSON form (proto3 JSON, as the specification's HTTP
/// bindings and SDKs read it).
pub fn json(card: &proto::AgentCard) -> String {
    let bytes = card.encode_to_vec();
    match a2a_pb::protojson::AgentCard::decode(bytes.as_slice()) {
        Ok(card) => serde_json::to_string_pretty(&card).unwrap_or_default(),
        // Both types come from one proto file: the bytes always decode.
        Err(error) => format!("{{\"error\": \"{error}\"}}"),
    }
}
