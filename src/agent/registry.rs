//! The agents a server hosts, built from their configuration.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::{Agent, ToolEntry, DEFAULT_MAX_STEPS};
use crate::config::{duration::Unit, ConfigError};
use crate::model::{ModelCatalog, ModelConfigError, ProviderConfigs};
use crate::tools::{AskUser, ToolCatalog};

/// An agent as `agentd.toml` declares it (`[[agents]]`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub id: String,
    #[serde(default)]
    pub description: String,
    /// `scripted` (the default), or `PROVIDER:MODEL`: `openai:gpt-4o-mini`,
    /// `anthropic:claude-...`, or a `[providers.NAME]` table's name.
    #[serde(default = "default_model")]
    pub model: String,
    /// System instructions placed before every conversation.
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default = "default_max_steps")]
    pub max_steps: u32,
    /// How long this agent's suspensions wait for an answer (`"2h"`;
    /// default: the server's `suspend_ttl`).
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub suspend_ttl: Option<Duration>,
    /// Deprecated spelling of `suspend_ttl`, in seconds.
    #[serde(default)]
    pub suspend_ttl_secs: Option<u64>,
    /// The agent's tools: names (`"ask_user"`) or tables
    /// (`{ name = "human_review", require_approval = true }`); `ask_user`
    /// and `human_review` are built in, `[[tools]]` entries are used by
    /// name, an MCP server's tools as `mcp:SERVER` (all) or
    /// `mcp:SERVER/TOOL` (one). A table may carry `approval_rules`.
    #[serde(default = "default_tools")]
    pub tools: Vec<ToolEntry>,
    /// Selected by an empty agent_id. Without one, the first agent is.
    #[serde(default)]
    pub default: bool,
    /// The most messages of a conversation (a thread's history included)
    /// sent to the model at each step, not counting the system
    /// instructions; the oldest are left out first, a tool call always with
    /// its results. Unset: no bound.
    #[serde(default)]
    pub history_max_messages: Option<usize>,
    /// The most tokens (approximately: bytes / 4) sent to the model at each
    /// step, instructions included, windowed like `history_max_messages`.
    /// Unset: no bound.
    #[serde(default)]
    pub history_max_tokens: Option<usize>,
    /// How the inbox shows this agent's runs' metadata: which keys first,
    /// which not at all. Default: every key, by name.
    #[serde(default)]
    pub inbox_metadata: InboxMetadata,
}

/// `inbox_metadata` of an agent: the metadata keys its runs' cards show
/// first (in this order, the others following by name) and those they
/// hide. Only for showing: the metadata is stored and returned whole.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct InboxMetadata {
    #[serde(default)]
    pub first: Vec<String>,
    #[serde(default)]
    pub hidden: Vec<String>,
}

fn default_model() -> String {
    "scripted".to_owned()
}

fn default_max_steps() -> u32 {
    DEFAULT_MAX_STEPS
}

fn default_tools() -> Vec<ToolEntry> {
    vec![ToolEntry::name(AskUser::NAME)]
}

impl AgentSpec {
    /// The agent a server without configuration hosts.
    pub fn assistant() -> Self {
        Self {
            id: "assistant".to_owned(),
            description: "A helpful assistant that asks before it assumes (scripted model).".to_owned(),
            model: default_model(),
            instructions: None,
            max_steps: DEFAULT_MAX_STEPS,
            suspend_ttl: None,
            suspend_ttl_secs: None,
            tools: default_tools(),
            default: true,
            history_max_messages: None,
            history_max_tokens: None,
            inbox_metadata: InboxMetadata::default(),
        }
    }
}

/// A configuration that does not describe a usable set of agents.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("no agents are configured")]
    Empty,
    #[error("agent id {0:?} is used twice")]
    DuplicateAgent(String),
    #[error("agent {agent}: {source}")]
    Model {
        agent: String,
        #[source]
        source: ModelConfigError,
    },
    #[error("invalid [providers] table: {0}")]
    Providers(#[source] ModelConfigError),
    #[error("agent {agent}: unknown tool {tool:?} (known: {known})")]
    UnknownTool {
        agent: String,
        tool: String,
        known: String,
    },
    #[error("agent {agent}: tool {tool}: approval_rules[{index}]: {message}")]
    ApprovalRule {
        agent: String,
        tool: String,
        index: usize,
        message: String,
    },
    #[error(
        "agent {agent}: tool {tool}: on_expiry = \"approve\" is for calls that wait for approval: \
         set require_approval = true or give it an approval rule with then = \"ask\", or choose \
         on_expiry = \"decline\""
    )]
    ApproveWithoutApproval { agent: String, tool: String },
    #[error("agent {agent}: tool {tool:?} is listed twice")]
    DuplicateTool { agent: String, tool: String },
    #[error("agent {agent}: max_steps must be at least 1")]
    NoSteps { agent: String },
    #[error("agent {agent}: {setting} must be at least 1 (leave it out for no bound)")]
    EmptyHistory { agent: String, setting: &'static str },
    #[error("several agents are marked default: {0:?}")]
    SeveralDefaults(Vec<String>),
    #[error("{0}")]
    InvalidTool(String),
    #[error("agent {agent}: {source}")]
    Setting {
        agent: String,
        #[source]
        source: ConfigError,
    },
}

/// The agents of a server; one of them is the default.
pub struct AgentRegistry {
    agents: Vec<Arc<Agent>>,
    default: usize,
}

impl AgentRegistry {
    /// Builds the agents with the built-in tools and providers only.
    pub fn from_specs(specs: &[AgentSpec]) -> Result<Self, RegistryError> {
        Self::from_specs_with_tools(specs, &ToolCatalog::default(), &ProviderConfigs::new())
    }

    /// Builds the agents; their tools come from the built-in ones and
    /// `catalog` (configured tools, connected MCP servers), their models
    /// from the built-in providers and `providers` (`[providers.NAME]`).
    pub fn from_specs_with_tools(
        specs: &[AgentSpec],
        catalog: &ToolCatalog,
        providers: &ProviderConfigs,
    ) -> Result<Self, RegistryError> {
        if specs.is_empty() {
            return Err(RegistryError::Empty);
        }
        let defaults: Vec<String> = specs.iter().filter(|s| s.default).map(|s| s.id.clone()).collect();
        if defaults.len() > 1 {
            return Err(RegistryError::SeveralDefaults(defaults));
        }
        let mut models = ModelCatalog::new(providers).map_err(RegistryError::Providers)?;
        let mut agents: Vec<Arc<Agent>> = Vec::with_capacity(specs.len());
        for spec in specs {
            if agents.iter().any(|a| a.id == spec.id) {
                return Err(RegistryError::DuplicateAgent(spec.id.clone()));
            }
            agents.push(Arc::new(build_agent(spec, catalog, &mut models)?));
        }
        let default = specs.iter().position(|s| s.default).unwrap_or(0);
        Ok(Self { agents, default })
    }

    /// Builds a registry from agents made in code (library use).
    pub fn from_agents(agents: Vec<Agent>) -> Result<Self, RegistryError> {
        if agents.is_empty() {
            return Err(RegistryError::Empty);
        }
        Ok(Self {
            agents: agents.into_iter().map(Arc::new).collect(),
            default: 0,
        })
    }

    /// The agent with this id; an empty id selects the default agent.
    pub fn get(&self, id: &str) -> Option<&Arc<Agent>> {
        if id.is_empty() {
            return self.agents.get(self.default);
        }
        self.agents.iter().find(|a| a.id == id)
    }

    /// The default agent first, then the others in configuration order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<Agent>, bool)> {
        let default = &self.agents[self.default];
        std::iter::once((default, true)).chain(
            self.agents
                .iter()
                .enumerate()
                .filter(move |(i, _)| *i != self.default)
                .map(|(_, a)| (a, false)),
        )
    }
}

fn build_agent(
    spec: &AgentSpec,
    catalog: &ToolCatalog,
    models: &mut ModelCatalog,
) -> Result<Agent, RegistryError> {
    let model = models.model(&spec.model).map_err(|source| RegistryError::Model {
        agent: spec.id.clone(),
        source,
    })?;
    if spec.max_steps == 0 {
        return Err(RegistryError::NoSteps {
            agent: spec.id.clone(),
        });
    }
    for (setting, value) in [
        ("history_max_messages", spec.history_max_messages),
        ("history_max_tokens", spec.history_max_tokens),
    ] {
        if value == Some(0) {
            return Err(RegistryError::EmptyHistory {
                agent: spec.id.clone(),
                setting,
            });
        }
    }
    let tools = super::tool_resolve::agent_tools(spec, catalog)?;
    let mut agent = Agent::new(&spec.id, &spec.description, model, tools.tools);
    agent.approval_required = tools.approval_required;
    agent.approval_rules = tools.rules;
    agent.waits = tools.waits;
    agent.instructions.clone_from(&spec.instructions);
    agent.max_steps = spec.max_steps;
    agent.suspend_ttl = crate::config::settings::renamed_key(
        format!("[[agents]] {:?}", spec.id),
        "suspend_ttl",
        spec.suspend_ttl,
        "suspend_ttl_secs",
        spec.suspend_ttl_secs.map(|secs| Unit::Seconds.of(secs)),
    )
    .map_err(|source| RegistryError::Setting {
        agent: spec.id.clone(),
        source,
    })?;
    agent.history = super::HistoryWindow {
        max_messages: spec.history_max_messages,
        max_tokens: spec.history_max_tokens,
    };
    agent.inbox_metadata.clone_from(&spec.inbox_metadata);
    Ok(agent)
}
