//! Tools users bring, end to end through the gRPC API: client-executed
//! tools (per run and configured), HTTP tools against a local HTTP server,
//! MCP tools against MCP servers over stdio and streamable HTTP (which die
//! and come back), and approval declined before any of them is called.

mod approval;
mod client;
pub(crate) mod elicitation;
mod everything;
mod http;
pub(crate) mod http_server;
mod mcp;
pub(crate) mod mcp_server;

use std::ops::Deref;
use std::time::{Duration, Instant};

use agentd::agent::{AgentSpec, ToolEntry};
use agentd::grpc::convert::struct_to_json;
use agentd::pb;
use agentd::server::ServerSettings;
use agentd::tools::mcp::McpServerConfig;
use agentd::tools::ToolConfig;
use serde_json::Value;

use crate::configured::agent;
use crate::helpers::*;

/// A test server hosting agents with configured tools and MCP servers.
pub(crate) struct ToolServer {
    server: TestServer,
    _temp: tempfile::TempDir,
}

impl Deref for ToolServer {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        &self.server
    }
}

/// Starts a server hosting `agents` with these `[[tools]]` and
/// `[[mcp_servers]]` (written as in `agentd.toml`).
pub(crate) async fn start(agents: Vec<AgentSpec>, config: &str) -> ToolServer {
    let temp = tempfile::tempdir().expect("temp dir");
    let settings = settings_with(temp.path(), agents, config);
    ToolServer {
        server: TestServer::start_with(settings).await,
        _temp: temp,
    }
}

/// Settings with a store in `dir`, `agents`, and the `[[tools]]` and
/// `[[mcp_servers]]` of `config`.
pub(crate) fn settings_with(dir: &std::path::Path, agents: Vec<AgentSpec>, config: &str) -> ServerSettings {
    let mut settings = settings_in(dir);
    let file: ToolsFile = toml::from_str(config).expect("tool configuration");
    settings.agents = agents;
    settings.tools = file.tools;
    settings.mcp_servers = file.mcp_servers;
    settings
}

/// Why a server with these tools does not start.
pub(crate) async fn start_error(agents: Vec<AgentSpec>, config: &str) -> String {
    let temp = tempfile::tempdir().expect("temp dir");
    let settings = settings_with(temp.path(), agents, config);
    match agentd::server::build_runtime(&settings).await {
        Ok(_) => panic!("the server started"),
        Err(error) => error.to_string(),
    }
}

#[derive(serde::Deserialize)]
struct ToolsFile {
    #[serde(default)]
    tools: Vec<ToolConfig>,
    #[serde(default)]
    mcp_servers: Vec<McpServerConfig>,
}

/// A scripted agent with these tool entries.
pub(crate) fn agent_with(id: &str, tools: &[&str]) -> AgentSpec {
    agent(id, tools.iter().map(|t| ToolEntry::name(*t)).collect())
}

impl ToolServer {
    /// Runs `prompt` on `agent_id` and collects the stream.
    pub(crate) async fn run(&self, agent_id: &str, prompt: &str) -> Vec<pb::AgentChunk> {
        self.start_run(pb::StreamAgentRequest {
            agent_id: agent_id.into(),
            prompt: prompt.into(),
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
    }

    /// The single tool result of a run of `prompt`.
    pub(crate) async fn result_of(&self, agent_id: &str, prompt: &str) -> pb::ToolResult {
        let chunks = self.run(agent_id, prompt).await;
        let mut results = tool_results(&chunks);
        assert_eq!(results.len(), 1, "{:?}", kinds(&chunks));
        results.remove(0)
    }

    /// ExecuteTool on `agent_id`.
    pub(crate) async fn execute(&self, agent_id: &str, tool: &str, args: Value) -> pb::ExecuteToolResponse {
        self.client()
            .execute_tool(pb::ExecuteToolRequest {
                tool_name: tool.into(),
                args: Some(agentd::grpc::convert::json_to_struct(&args)),
                agent_id: agent_id.into(),
            })
            .await
            .expect("ExecuteTool")
            .into_inner()
    }

    /// The tools ListAgents shows for `agent_id`.
    pub(crate) async fn tools_of(&self, agent_id: &str) -> Vec<pb::ToolInfo> {
        let agents = self
            .client()
            .list_agents(pb::ListAgentsRequest {})
            .await
            .expect("ListAgents")
            .into_inner()
            .agents;
        agents
            .into_iter()
            .find(|a| a.agent_id == agent_id)
            .expect("the agent is listed")
            .tools
    }
}

/// A tool's input schema as JSON.
pub(crate) fn schema_of(tool: &pb::ToolInfo) -> Value {
    struct_to_json(tool.input_schema.as_ref().expect("an input schema"))
}

/// Polls `check` (bounded) until it returns true.
pub(crate) async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
