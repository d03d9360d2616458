//! What `serve_with` takes beside the runtime: who may call (API keys, and
//! whether health and reflection need one), TLS, which other origins' pages
//! may call (and the hosts they may name), how long a shutdown lets open streams finish, and the webhooks
//! it delivers. Built from the settings once, at startup;
//! secrets are read here and kept only in memory.

use std::time::Duration;

use tonic::transport::ServerTlsConfig;

use super::ServerSettings;
use super::TlsError;
use crate::auth::{ApiKeys, AuthConfigError};
use crate::config::{AllowedOrigins, PublicUrl, ServerConfig};
use crate::door::AllowedHosts;
use crate::grpc::Authenticator;
pub use crate::mcp::McpOptions;
use crate::webhooks::{Known, Webhook, WebhookConfigError};

/// How a server authenticates, encrypts and shuts down.
#[derive(Clone)]
pub struct ServeOptions {
    /// Who the callers of the agent service are.
    pub authenticator: Authenticator,
    /// `grpc.health.v1` needs an API key too.
    pub authenticate_health: bool,
    /// Server reflection needs an API key too.
    pub authenticate_reflection: bool,
    /// `None`: plaintext.
    pub tls: Option<ServerTlsConfig>,
    /// How long open streams and executing runs get to finish after the
    /// shutdown signal.
    pub drain: Duration,
    /// Where run events are pushed (`[[webhooks]]`).
    pub webhooks: Vec<Webhook>,
    /// Other origins whose pages may call (CORS); `None`: only pages
    /// served by this server.
    pub cors: Option<AllowedOrigins>,
    /// A2A push notifications may go to non-public addresses.
    pub a2a_push_allow_private: bool,
    /// The `Host` names requests a browser can make may name.
    pub allowed_hosts: AllowedHosts,
    /// Where clients reach the server, when not where it listens.
    pub public_url: Option<PublicUrl>,
    /// The MCP endpoint's key.
    pub mcp: McpOptions,
}

impl Default for ServeOptions {
    /// Open, plaintext, the default drain period.
    fn default() -> Self {
        Self {
            authenticator: Authenticator::open(),
            authenticate_health: false,
            authenticate_reflection: false,
            tls: None,
            drain: ServerConfig::default().drain_timeout,
            webhooks: Vec::new(),
            cors: None,
            a2a_push_allow_private: false,
            allowed_hosts: AllowedHosts::configured(None, None),
            public_url: None,
            mcp: McpOptions::default(),
        }
    }
}

/// Security settings that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("API keys: {0}")]
    Auth(#[from] AuthConfigError),
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    #[error("{0}")]
    Webhooks(#[from] WebhookConfigError),
}

impl ServeOptions {
    /// Reads the API keys and TLS files the settings name, and takes their
    /// drain period.
    pub fn from_settings(settings: &ServerSettings) -> Result<Self, OptionsError> {
        let keys = ApiKeys::load(&settings.tenants, settings.auth.api_keys_file.as_deref())?;
        let agents = settings.agents.iter().map(|agent| agent.id.clone()).collect();
        let tenants = (!keys.is_empty()).then(|| keys.tenants().into_keys().collect());
        let known = Known {
            agents: &agents,
            tenants: tenants.as_ref(),
        };
        let webhooks = Webhook::resolve_all(&settings.webhooks, &known)?;
        Ok(Self {
            authenticator: Authenticator::new(keys),
            authenticate_health: settings.auth.authenticate_health,
            authenticate_reflection: settings.auth.authenticate_reflection,
            tls: super::tls::load(&settings.tls)?,
            drain: settings.server.drain_timeout,
            webhooks,
            cors: settings.server.cors_allow_origin.clone(),
            a2a_push_allow_private: settings.a2a.push_allow_private,
            allowed_hosts: AllowedHosts::configured(
                settings.server.allowed_hosts(),
                settings.server.public_url.as_ref(),
            ),
            public_url: settings.server.public_url.clone(),
            mcp: McpOptions {
                state_key: settings.server.mcp_state_key.clone(),
            },
        })
    }

    /// The same options, allowing pages of `origins` to call (CORS).
    pub fn with_cors(mut self, origins: AllowedOrigins) -> Self {
        self.cors = Some(origins);
        self
    }

    /// The same options with this drain period.
    pub fn with_drain(mut self, drain: Duration) -> Self {
        self.drain = drain;
        self
    }
}
