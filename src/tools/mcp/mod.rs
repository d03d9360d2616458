//! MCP servers (`[[mcp_servers]]` in `agentd.toml`), reached with the
//! official Rust SDK, `rmcp`, over stdio or streamable HTTP. agentd
//! connects at start-up, lists each server's tools, and exposes them under
//! their own names to the agents that name them (`mcp:SERVER` for all of a
//! server's tools, `mcp:SERVER/TOOL` for one). A server that goes away is
//! reconnected in the background; a call meanwhile is an error result
//! ("MCP server NAME is unavailable"). Results become text for the model.
//! A tool call carries the trace context of its run in `params._meta`
//! (`traceparent`, `tracestate`, as MCP says), and over HTTP in the
//! headers of its POST as well. A server that asks for input during a call
//! (MCP elicitation) suspends the run with the request (see `call.rs`).

mod call;
mod client;
mod config;
mod connection;
mod content;
mod elicitation;
mod session;
mod traced_http;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

pub use config::{
    Endpoint, McpServerConfig, Protocol, Timeouts, DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT,
};
pub use elicitation::check_response;
pub use session::stop_all;

use call::Call;
use client::Dial;
use connection::Connection;

use super::{Resumed, Tool, ToolContext, ToolOutcome};
use crate::domain::{Answer, AnswerError, SuspendPayload, ToolSpec};

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
        protocol: Protocol,
        timeouts: Timeouts,
    ) -> Result<Self, String> {
        let call_timeout = timeouts.call;
        let dial = Dial {
            endpoint,
            protocol,
            calls: Default::default(),
        };
        let session = session::connect_within(&dial, timeouts.startup).await?;
        let listed = session
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {e}"))?;
        let protocol_version = session
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default();
        let connection = Arc::new(Connection::supervise(&config.name, dial, session));
        tracing::info!(server = %config.name, tools = listed.len(), %protocol_version, "MCP server connected");
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

impl McpTool {
    fn call(&self, ctx: ToolContext) -> Call<'_> {
        Call {
            connection: &self.connection,
            tool: &self.spec.name,
            timeout: self.timeout,
            ctx,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, args: &Value, ctx: ToolContext) -> ToolOutcome {
        self.call(ctx).start(args).await
    }

    /// An answer to the server's request for input goes to the server: the
    /// call goes on with it, once it fits what the server asked.
    fn resume(&self, payload: &SuspendPayload, answer: &Answer) -> Result<Resumed, AnswerError> {
        match payload {
            SuspendPayload::Elicitation(asked) => {
                check_response(asked, answer)?;
                Ok(Resumed::Proceed)
            }
            _ => super::resume_with_data(payload, answer).map(Resumed::Output),
        }
    }

    /// A request for input that waits on this process's live session is
    /// answered `cancel`, so that the server stops waiting for it.
    fn abandon(&self, payload: &SuspendPayload) {
        Call::abandon(&self.connection, payload);
    }

    async fn proceed(
        &self,
        args: &Value,
        payload: &SuspendPayload,
        answer: &Answer,
        ctx: ToolContext,
    ) -> ToolOutcome {
        self.call(ctx).proceed(args, payload, answer).await
    }
}
