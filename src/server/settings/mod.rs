//! The whole `agentd.toml`: the server's settings (`[server]`, `[auth]`,
//! `[tls]`, `[a2a]`, declared in `config/`) with what the server hosts and
//! serves (agents, tools, MCP servers, model providers, tenants, limits,
//! threads, webhooks), merged under the flags and variables into the
//! settings a server runs with. With no file at all the server hosts the
//! default agent `assistant`.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::agent::AgentSpec;
use crate::auth::TenantConfig;
use crate::config::{
    duration, A2aConfig, A2aLayer, AuthConfig, AuthLayer, ConfigError, Layer, Overrides, ServerConfig,
    ServerLayer, Source, TlsConfig, TlsLayer,
};
use crate::limits::Limits;
use crate::model::ProviderConfigs;
use crate::tools::mcp::McpServerConfig;
use crate::tools::ToolConfig;
use crate::webhooks::WebhookConfig;

/// The whole `agentd.toml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `[server]`: where the server listens and keeps its runs.
    #[serde(default, deserialize_with = "file_layer")]
    pub server: ServerLayer,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
    /// `[[tools]]`: client-executed and HTTP tools that agents use by name.
    #[serde(default)]
    pub tools: Vec<ToolConfig>,
    /// `[[mcp_servers]]`: MCP servers whose tools agents use.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerConfig>,
    /// `[providers.NAME]`: model providers that agents name in `model`.
    #[serde(default)]
    pub providers: ProviderConfigs,
    /// `[[tenants]]`: tenants and where their API keys are.
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    /// `[auth]`: the shared API keys file; whether health and reflection
    /// need a key.
    #[serde(default, deserialize_with = "file_layer")]
    pub auth: AuthLayer,
    /// `[tls]`: certificate, key and client CA files.
    #[serde(default, deserialize_with = "file_layer")]
    pub tls: TlsLayer,
    /// `[a2a]`: A2A push notifications.
    #[serde(default, deserialize_with = "file_layer")]
    pub a2a: A2aLayer,
    /// `[limits]`: hard limits on requests and runs.
    #[serde(default)]
    pub limits: Limits,
    /// `[threads]`: conversation threads.
    #[serde(default)]
    pub threads: ThreadsFile,
    /// `[[webhooks]]`: endpoints the run events are pushed to.
    #[serde(default)]
    pub webhooks: Vec<WebhookConfig>,
}

/// A table of settings read from the file, its deprecated spellings
/// folded in (so that every way of reading the file accepts them).
fn file_layer<'de, D, L>(deserializer: D) -> Result<L, D::Error>
where
    D: serde::Deserializer<'de>,
    L: Layer + Deserialize<'de>,
{
    L::deserialize(deserializer)?
        .fold_deprecated(&Source::File(L::TABLE.to_owned()))
        .map_err(serde::de::Error::custom)
}

/// `[threads]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThreadsFile {
    /// Threads idle for longer than this (`"30d"`, `"12h"`) are deleted
    /// with their runs by the sweep; unset keeps them.
    #[serde(default, deserialize_with = "retention")]
    pub retention: Option<Duration>,
}

fn retention<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    duration::parse_positive(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// The settings a server runs with, after every source is merged.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSettings {
    /// `[server]`, its flags and variables.
    pub server: ServerConfig,
    pub agents: Vec<AgentSpec>,
    /// Configured tools (`[[tools]]`).
    pub tools: Vec<ToolConfig>,
    /// Configured MCP servers (`[[mcp_servers]]`).
    pub mcp_servers: Vec<McpServerConfig>,
    /// Model providers (`[providers.NAME]`), besides the built-in ones.
    pub providers: ProviderConfigs,
    /// Tenants with API keys (`[[tenants]]`).
    pub tenants: Vec<TenantConfig>,
    /// Authentication (`[auth]`, `--api-keys-file`, ...).
    pub auth: AuthConfig,
    /// TLS (`[tls]`, `--tls-cert`, `--tls-key`, `--tls-client-ca`).
    pub tls: TlsConfig,
    /// The A2A service (`[a2a]`, `--a2a-push-allow-private`).
    pub a2a: A2aConfig,
    /// Hard limits (`[limits]`).
    pub limits: Limits,
    /// Threads idle for longer are deleted (`[threads] retention`).
    pub thread_retention: Option<Duration>,
    /// Webhooks (`[[webhooks]]`), as written; resolved when the server
    /// starts (see [`crate::webhooks::Webhook::resolve_all`]).
    pub webhooks: Vec<WebhookConfig>,
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source: Box::new(source),
        })
    }

    /// Merges the file under the overrides (flags over variables, see
    /// [`Overrides::or`]), and the defaults under both.
    pub fn settle(self, overrides: Overrides) -> ServerSettings {
        ServerSettings {
            server: overrides.server.or(self.server).resolve(),
            agents: if self.agents.is_empty() {
                vec![AgentSpec::assistant()]
            } else {
                self.agents
            },
            tools: self.tools,
            mcp_servers: self.mcp_servers,
            providers: self.providers,
            tenants: self.tenants,
            auth: overrides.auth.or(self.auth).resolve(),
            tls: overrides.tls.or(self.tls).resolve(),
            a2a: overrides.a2a.or(self.a2a).resolve(),
            limits: self.limits,
            thread_retention: self.threads.retention,
            webhooks: self.webhooks,
        }
    }
}

#[cfg(test)]
mod tests;
