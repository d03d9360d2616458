//! MCP tools through the API: a stdio server (the example program) and a
//! streamable HTTP server (in this process). Tools are listed with their
//! schemas, called with validated arguments, their results become text;
//! a server that dies makes calls error results until it is back.

use agentd::pb::FinishReason;
use serde_json::json;

use super::mcp_server::{stdio_server_program, McpHttpServer};
use super::*;

async fn stdio_server() -> ToolServer {
    let program = stdio_server_program();
    start(
        vec![agent_with("echoer", &["ask_user", "mcp:echo"])],
        &format!(
            r#"
            [[mcp_servers]]
            name = "echo"
            command = {program:?}
            timeout = "10s"
            "#,
            program = program.display().to_string(),
        ),
    )
    .await
}

async fn http_server(mcp: &McpHttpServer, tools: &[&str]) -> ToolServer {
    start(
        vec![agent_with("web", tools)],
        &format!(
            r#"
            [[mcp_servers]]
            name = "web"
            url = "{url}"
            timeout = "10s"
            "#,
            url = mcp.url(),
        ),
    )
    .await
}

#[tokio::test]
async fn a_stdio_server_lists_its_tools_and_answers_calls() {
    let server = stdio_server().await;
    let tools = server.tools_of("echoer").await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ask_user", "echo", "add", "fail", "exit"]);
    let echo = &tools[1];
    assert_eq!(echo.source, "mcp");
    assert_eq!(echo.description, "Gives the text back.");
    assert_eq!(schema_of(echo)["required"], json!(["text"]));

    let chunks = server.run("echoer", r#"call echo {"text": "hello"}"#).await;
    let result = tool_results(&chunks).remove(0);
    assert!(!result.is_error);
    assert_eq!(result.content, "echo: hello");
    assert_eq!(finish(&chunks).text, "The echo tool returned: echo: hello.");

    let failed = server.result_of("echoer", "call fail {}").await;
    assert!(failed.is_error);
    assert_eq!(failed.content, "the fail tool always fails");

    let invalid = server.result_of("echoer", r#"call add {"a": 1}"#).await;
    assert!(invalid.is_error);
    assert!(
        invalid.content.starts_with("Invalid arguments for add"),
        "{}",
        invalid.content
    );
}

#[tokio::test]
async fn a_stdio_server_that_dies_is_unavailable_then_restarted() {
    let server = stdio_server().await;
    // The process exits in the middle of the call.
    let died = server.result_of("echoer", "call exit {}").await;
    assert!(died.is_error);
    assert_eq!(died.content, "MCP server echo is unavailable");

    // agentd starts it again in the background.
    eventually("the stdio server is back", || async {
        let response = server.execute("echoer", "echo", json!({"text": "back"})).await;
        if response.is_error {
            assert_eq!(response.content, "MCP server echo is unavailable");
        }
        !response.is_error
    })
    .await;
    let chunks = server.run("echoer", r#"call add {"a": 2, "b": 3}"#).await;
    assert_eq!(tool_results(&chunks)[0].content, "5");
}

#[tokio::test]
async fn an_http_server_answers_one_named_tool() {
    let mcp = McpHttpServer::start().await;
    let server = http_server(&mcp, &["mcp:web/add"]).await;
    let tools = server.tools_of("web").await;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add"], "only the named tool");

    let chunks = server.run("web", r#"call add {"a": 1.5, "b": 2}"#).await;
    assert_eq!(tool_results(&chunks)[0].content, "3.5");
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert_eq!(mcp.calls(), 1);

    // Arguments are checked before the server sees them.
    let invalid = server.result_of("web", r#"call add {"a": "one", "b": 2}"#).await;
    assert!(invalid.is_error);
    assert_eq!(mcp.calls(), 1, "an invalid call never reaches the server");
    // A tool of the server that the agent did not take is unknown to it.
    let other = server.result_of("web", r#"call echo {"text": "x"}"#).await;
    assert_eq!(other.content, "Unknown tool: echo");
}

#[tokio::test]
async fn an_http_server_that_dies_is_unavailable_until_it_comes_back() {
    let mcp = McpHttpServer::start().await;
    let server = http_server(&mcp, &["mcp:web"]).await;
    assert_eq!(
        server
            .result_of("web", r#"call echo {"text": "one"}"#)
            .await
            .content,
        "echo: one"
    );

    let stopped = mcp.kill().await;
    let down = server.result_of("web", r#"call echo {"text": "two"}"#).await;
    assert!(down.is_error);
    assert_eq!(down.content, "MCP server web is unavailable");

    let mcp = McpHttpServer::restart(stopped).await;
    eventually("the HTTP server is reachable again", || async {
        let response = server.execute("web", "echo", json!({"text": "three"})).await;
        if response.is_error {
            assert_eq!(response.content, "MCP server web is unavailable");
            return false;
        }
        assert_eq!(response.content, "echo: three");
        true
    })
    .await;
    assert!(mcp.calls() >= 2);
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_stops_the_start() {
    let error = start_error(
        vec![agent_with("broken", &["mcp:missing"])],
        r#"
        [[mcp_servers]]
        name = "missing"
        command = "/nonexistent/mcp-server"
        startup_timeout = "300ms"
        "#,
    )
    .await;
    assert!(
        error.starts_with(
            "invalid tool configuration: MCP server missing: cannot start \"/nonexistent/mcp-server\""
        ),
        "{error}"
    );
}

#[tokio::test]
async fn an_agent_naming_an_unknown_server_or_tool_is_refused() {
    let mcp = McpHttpServer::start().await;
    let config = format!("[[mcp_servers]]\nname = \"web\"\nurl = \"{}\"", mcp.url());
    let error = start_error(vec![agent_with("a", &["mcp:web/nope"])], &config).await;
    assert!(error.contains("unknown tool \"mcp:web/nope\""), "{error}");
    let error = start_error(vec![agent_with("a", &["mcp:other"])], &config).await;
    assert!(error.contains("unknown tool \"mcp:other\""), "{error}");
}

#[tokio::test]
async fn a_header_that_is_not_a_header_stops_the_start_at_once() {
    let started = std::time::Instant::now();
    let error = start_error(
        vec![agent_with("web", &["mcp:web"])],
        r#"
        [[mcp_servers]]
        name = "web"
        url = "http://127.0.0.1:9/mcp"
        headers = { "not a header" = "x" }
        startup_timeout = "30s"
        "#,
    )
    .await;
    assert!(
        error.contains("MCP server web: headers: \"not a header\" is not a valid header name"),
        "{error}"
    );
    // Refused with the configuration, not after trying to connect.
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
