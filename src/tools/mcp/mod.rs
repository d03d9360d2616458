//! MCP servers (`[[mcp_servers]]` in `agentd.toml`), reached with the
//! official Rust SDK, `rmcp`, over stdio or streamable HTTP. agentd
//! connects at start-up, lists each server's tools, and exposes them under
//! their own names to the agents that name them (`mcp:SERVER` for all of a
//! server's tools, `mcp:SERVER/TOOL` for one). A server that goes away is
//! reconnected in the background; a call meanwhile is an error result
//! ("MCP server NAME is unavailable"). Results become text for the model.
//! A tool call carries the trace context of its run in `params._meta`
//! (`traceparent`, `tracestate`, as MCP says), and over HTTP in the
//! headers of its POST as well.

mod config;
mod connection;
mod content;
mod traced_http;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

pub use config::{Endpoint, McpServerConfig, Timeouts, DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT};
use connection::{CallError, Connection};

use super::{Tool, ToolContext, ToolOutcome};
use crate::domain::{ToolOutput, ToolSpec};

/// A connected MCP server and the tools it listed at start-up.
pub struct McpServer {
    name: String,
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.spec().name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpServer {
    /// Connects (retrying until the server's start-up timeout), lists its
    /// tools and keeps the connection supervised from then on.
    /// `endpoint` and `timeouts` are `config`'s, checked.
    pub async fn connect(
        config: &McpServerConfig,
        endpoint: Endpoint,
        timeouts: Timeouts,
    ) -> Result<Self, String> {
        let call_timeout = timeouts.call;
        let session = connection::connect_within(&endpoint, timeouts.startup).await?;
        let listed = session
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        let connection = Arc::new(Connection::supervise(
            &config.name,
            endpoint,
            session,
            call_timeout,
        ));
        tracing::info!(server = %config.name, tools = listed.len(), "MCP server connected");
        let tools = listed
            .into_iter()
            .map(|tool| {
                let description = tool
                    .description
                    .as_deref()
                    .or(tool.title.as_deref())
                    .unwrap_or_default()
                    .to_owned();
                Arc::new(McpTool {
                    spec: ToolSpec {
                        name: tool.name.to_string(),
                        description,
                        input_schema: Value::Object((*tool.input_schema).clone()),
                        source: "mcp",
                        resume_schema: None,
                    },
                    connection: Arc::clone(&connection),
                    timeout: call_timeout,
                }) as Arc<dyn Tool>
            })
            .collect();
        Ok(Self {
            name: config.name.clone(),
            tools,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's tools, in the order it listed them.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// One tool by its MCP name.
    pub fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.spec().name == name)
    }
}

/// A tool of an MCP server.
struct McpTool {
    spec: ToolSpec,
    connection: Arc<Connection>,
    timeout: std::time::Duration,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, args: &Value, _ctx: ToolContext) -> ToolOutcome {
        let server = self.connection.name();
        let output = match self.connection.call(&self.spec.name, args).await {
            Ok(result) => content::to_output(result),
            Err(CallError::Unavailable) => ToolOutput::error(format!("MCP server {server} is unavailable")),
            Err(CallError::TimedOut) => ToolOutput::error(format!(
                "MCP server {server} did not answer within {} ms",
                self.timeout.as_millis()
            )),
            Err(CallError::Refused(message)) => {
                ToolOutput::error(format!("MCP server {server} refused the call: {message}"))
            }
            Err(CallError::Failed(message)) => {
                ToolOutput::error(format!("MCP call to {server} failed: {message}"))
            }
        };
        ToolOutcome::Done(output)
    }
}
