//! The tools of the example MCP server: `echo` (gives its text back),
//! `add` (adds two numbers), `fail` (always an error result) and, when the
//! server runs as its own process, `exit` (the process ends mid-call, as a
//! crashing server would). Written against the `rmcp` server API without
//! macros, so that the whole protocol surface is visible. The integration
//! tests serve the same tools over streamable HTTP.

// Public for the integration tests, which include this file as a module of
// their own; the example binary only uses it inside itself.
#![allow(unreachable_pub)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{json, Map, Value};

/// The example server's tools.
#[derive(Clone, Default)]
pub struct EchoServer {
    /// Tool calls served, shared with whoever started the server.
    pub calls: Arc<AtomicUsize>,
    /// Whether the `exit` tool is offered (only for a server process).
    pub can_exit: bool,
}

fn schema(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn text(content: impl Into<String>) -> Vec<ContentBlock> {
    vec![ContentBlock::text(content)]
}

impl EchoServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            Tool::new(
                "echo",
                "Gives the text back.",
                schema(json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "minLength": 1}},
                    "required": ["text"]
                })),
            ),
            Tool::new(
                "add",
                "Adds two numbers.",
                schema(json!({
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"]
                })),
            ),
            Tool::new("fail", "Always fails.", schema(json!({"type": "object"}))),
        ];
        if self.can_exit {
            tools.push(Tool::new(
                "exit",
                "Ends the server process at once, without answering.",
                schema(json!({"type": "object"})),
            ));
        }
        tools
    }

    fn call(&self, name: &str, args: &Map<String, Value>) -> Result<CallToolResult, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match name {
            "echo" => {
                let said = args.get("text").and_then(Value::as_str).unwrap_or_default();
                Ok(CallToolResult::success(text(format!("echo: {said}"))))
            }
            "add" => {
                let number = |key: &str| args.get(key).and_then(Value::as_f64).unwrap_or_default();
                Ok(CallToolResult::success(text(format!(
                    "{}",
                    number("a") + number("b")
                ))))
            }
            "fail" => Ok(CallToolResult::error(text("the fail tool always fails"))),
            "exit" if self.can_exit => std::process::exit(0),
            other => Err(ErrorData::invalid_params(format!("no tool named {other}"), None)),
        }
    }
}

impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        self.call(&request.name, &args).map(CallToolResponse::from)
    }
}
