//! The tools `agentd.toml` adds to the built-in ones: `[[tools]]` entries
//! (client-executed tools, `kind = "client"`, and HTTP tools,
//! `kind = "http"`) and the tools of `[[mcp_servers]]`. Built once at
//! start-up, connecting the MCP servers agents use; agents then pick their
//! tools from it by name. It runs no tool itself.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::try_join_all;
use serde::Deserialize;
use serde_json::Value;

use super::client::{check_input_schema, check_tool_name, ClientTool};
use super::http::{HttpTool, HttpToolConfig};
use super::mcp::{McpServer, McpServerConfig};
use super::{AskUser, HumanReview, Tool};
use crate::domain::{any_object, ToolDefinition};
use crate::limits::AskUserLimits;
use crate::outbound::redirects;

/// How long an HTTP tool waits to connect before it counts as unreachable.
const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One `[[tools]]` entry, told apart by `kind`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolConfig {
    /// Executed by the caller: calling it suspends the run.
    Client(ClientToolConfig),
    /// An HTTP endpoint agentd calls.
    Http(HttpToolConfig),
}

/// A `kind = "client"` tool.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClientToolConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input (default: any object).
    #[serde(default = "any_object")]
    pub input_schema: Value,
}

impl ToolConfig {
    pub fn name(&self) -> &str {
        match self {
            ToolConfig::Client(config) => &config.name,
            ToolConfig::Http(config) => &config.name,
        }
    }

    fn input_schema(&self) -> &Value {
        match self {
            ToolConfig::Client(config) => &config.input_schema,
            ToolConfig::Http(config) => &config.input_schema,
        }
    }
}

/// A `[[tools]]` or `[[mcp_servers]]` entry that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("tools: {name:?}: {reason}")]
    Tool { name: String, reason: String },
    #[error("tools: {0:?} is defined twice")]
    DuplicateTool(String),
    #[error("mcp_servers: {0:?} is configured twice")]
    DuplicateServer(String),
    #[error("MCP server {name}: {reason}")]
    Server { name: String, reason: String },
    #[error("building the HTTP client: {0}")]
    HttpClient(String),
}

/// The configured tools and the connected MCP servers.
#[derive(Default)]
pub struct ToolCatalog {
    tools: Vec<Arc<dyn Tool>>,
    servers: Vec<McpServer>,
    /// What the built-in ask_user checks its input against.
    ask_user_limits: AskUserLimits,
}

impl ToolCatalog {
    /// Builds every `[[tools]]` entry and connects the MCP servers for
    /// which `wanted` is true (those some agent names); the others are
    /// checked but not connected.
    pub async fn build(
        tools: &[ToolConfig],
        servers: &[McpServerConfig],
        wanted: impl Fn(&str) -> bool,
    ) -> Result<Self, CatalogError> {
        let tools = build_tools(tools)?;
        let mut names = BTreeSet::new();
        let mut connect = Vec::new();
        for config in servers {
            if !names.insert(config.name.as_str()) {
                return Err(CatalogError::DuplicateServer(config.name.clone()));
            }
            let checked = config
                .endpoint()
                .and_then(|endpoint| Ok((endpoint, config.protocol()?, config.timeouts()?)));
            let (endpoint, protocol, timeouts) = checked.map_err(|reason| CatalogError::Server {
                name: config.name.clone(),
                reason,
            })?;
            if !wanted(&config.name) {
                tracing::warn!(server = %config.name, "MCP server is not used by any agent: not connected");
                continue;
            }
            connect.push((config, endpoint, protocol, timeouts));
        }
        // All at once; the first failure ends the others. The servers stay
        // in configuration order.
        let servers = try_join_all(connect.into_iter().map(
            |(config, endpoint, protocol, timeouts)| async move {
                McpServer::connect(config, endpoint, protocol, timeouts)
                    .await
                    .map_err(|reason| CatalogError::Server {
                        name: config.name.clone(),
                        reason,
                    })
            },
        ))
        .await?;
        Ok(Self {
            tools,
            servers,
            ask_user_limits: AskUserLimits::default(),
        })
    }

    /// The catalog with ask_user checking its input against `limits`.
    pub fn with_ask_user_limits(mut self, limits: AskUserLimits) -> Self {
        self.ask_user_limits = limits;
        self
    }

    /// What the built-in ask_user checks its input against.
    pub fn ask_user_limits(&self) -> AskUserLimits {
        self.ask_user_limits
    }

    /// A `[[tools]]` tool by name.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name)
    }

    /// A connected MCP server by name.
    pub fn server(&self, name: &str) -> Option<&McpServer> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// Every name an agent may list, for error messages: the built-in
    /// tools, the `[[tools]]` and `mcp:SERVER` for each server.
    pub fn known_names(&self) -> Vec<String> {
        [AskUser::NAME, HumanReview::NAME]
            .into_iter()
            .map(str::to_owned)
            .chain(self.tools.iter().map(|t| t.spec().name.clone()))
            .chain(self.servers.iter().map(|s| format!("mcp:{}", s.name())))
            .collect()
    }
}

/// The MCP server an agent's tool entry names (`mcp:SERVER` or
/// `mcp:SERVER/TOOL`), if it names one.
pub(crate) fn mcp_reference(entry: &str) -> Option<(&str, Option<&str>)> {
    let reference = entry.strip_prefix("mcp:")?;
    Some(match reference.split_once('/') {
        Some((server, tool)) => (server, Some(tool)),
        None => (reference, None),
    })
}

fn build_tools(configs: &[ToolConfig]) -> Result<Vec<Arc<dyn Tool>>, CatalogError> {
    let mut client: Option<reqwest::Client> = None;
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(configs.len());
    for config in configs {
        let name = config.name();
        let refuse = |reason: String| CatalogError::Tool {
            name: name.to_owned(),
            reason,
        };
        check_tool_name(name).map_err(|e| refuse(e.to_string()))?;
        if name == AskUser::NAME || name == HumanReview::NAME {
            return Err(refuse("this is the name of a built-in tool".into()));
        }
        if tools.iter().any(|t| t.spec().name == name) {
            return Err(CatalogError::DuplicateTool(name.to_owned()));
        }
        check_input_schema(config.input_schema()).map_err(|e| refuse(e.to_string()))?;
        let tool: Arc<dyn Tool> = match config {
            ToolConfig::Client(config) => Arc::new(ClientTool::new(&ToolDefinition {
                name: config.name.clone(),
                description: config.description.clone(),
                input_schema: config.input_schema.clone(),
                require_approval: false,
            })),
            ToolConfig::Http(config) => {
                let client = match &client {
                    Some(client) => client.clone(),
                    None => {
                        // Redirects only within the tool's origin: its
                        // headers never reach another host.
                        let built = crate::http_client::builder()
                            .connect_timeout(HTTP_CONNECT_TIMEOUT)
                            .redirect(redirects::within_origin(redirects::Follow::Any))
                            .build()
                            .map_err(|e| CatalogError::HttpClient(e.to_string()))?;
                        client.insert(built).clone()
                    }
                };
                Arc::new(HttpTool::new(config, client).map_err(refuse)?)
            }
        };
        tools.push(tool);
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        tools: Vec<ToolConfig>,
    }

    fn parse(text: &str) -> Result<Vec<ToolConfig>, toml::de::Error> {
        toml::from_str::<File>(text).map(|f| f.tools)
    }

    #[test]
    fn kinds_parse_with_their_defaults() {
        let tools = parse(
            r#"
            [[tools]]
            kind = "client"
            name = "lookup_order"
            description = "Looks an order up"
            input_schema = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }

            [[tools]]
            kind = "http"
            name = "weather"
            url = "http://127.0.0.1:9/weather"
            method = "GET"
            headers = { Authorization = "Bearer ${TOKEN}" }
            "#,
        )
        .unwrap();
        assert_eq!(tools[0].name(), "lookup_order");
        let ToolConfig::Http(http) = &tools[1] else {
            panic!("expected an http tool");
        };
        assert_eq!(http.method, super::super::http::HttpMethod::Get);
        assert_eq!(http.timeout(), Ok(super::super::http::DEFAULT_TIMEOUT));
        assert!(!http.idempotent);
        assert_eq!(http.input_schema, any_object());
        let printed = format!("{http:?}");
        assert!(!printed.contains("Bearer"), "{printed}");
    }

    #[test]
    fn unknown_kinds_and_keys_are_rejected() {
        assert!(parse("[[tools]]\nkind = \"grpc\"\nname = \"x\"").is_err());
        assert!(parse("[[tools]]\nkind = \"client\"\nname = \"x\"\nurl = \"http://x\"").is_err());
        assert!(parse("[[tools]]\nname = \"x\"").is_err());
    }

    #[test]
    fn tools_are_checked_when_built() {
        let client = |name: &str, schema: Value| {
            ToolConfig::Client(ClientToolConfig {
                name: name.into(),
                description: String::new(),
                input_schema: schema,
            })
        };
        assert!(build_tools(&[client("ok", any_object())]).is_ok());
        for bad in [
            vec![client("ask_user", any_object())],
            vec![client("bad name", any_object())],
            vec![client("x", serde_json::json!({"type": "array"}))],
            vec![client("x", any_object()), client("x", any_object())],
        ] {
            assert!(build_tools(&bad).is_err());
        }
    }

    #[test]
    fn mcp_references_name_a_server_and_maybe_a_tool() {
        assert_eq!(mcp_reference("mcp:files"), Some(("files", None)));
        assert_eq!(mcp_reference("mcp:files/read"), Some(("files", Some("read"))));
        assert_eq!(mcp_reference("ask_user"), None);
    }
}
