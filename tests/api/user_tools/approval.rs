//! Approval with tools users bring: a declined call of an HTTP tool and of
//! an MCP tool never reaches the server; an approved one does.

use agentd::agent::ToolEntry;
use agentd::pb::FinishReason;

use super::http_server::HttpServer;
use super::mcp_server::{assert_no_calls, McpHttpServer};
use super::*;
use crate::configured::{agent, approval, approvals};

const BOTH: &str = r#"call weather {"city": "Oslo"} then call echo {"text": "hi"}"#;

async fn guarded(http: &HttpServer, mcp: &McpHttpServer) -> ToolServer {
    start(
        vec![agent(
            "guarded",
            vec![
                ToolEntry::with_approval("weather"),
                ToolEntry::with_approval("mcp:web/echo"),
            ],
        )],
        &format!(
            r#"
            [[tools]]
            kind = "http"
            name = "weather"
            url = "{weather}"

            [[mcp_servers]]
            name = "web"
            url = "{mcp}"
            "#,
            weather = http.url("/weather"),
            mcp = mcp.url(),
        ),
    )
    .await
}

#[tokio::test]
async fn declined_calls_never_reach_the_http_or_mcp_server() {
    let http = HttpServer::start().await;
    let mcp = McpHttpServer::start().await;
    let server = guarded(&http, &mcp).await;
    let tools = server.tools_of("guarded").await;
    assert!(tools.iter().all(|t| t.require_approval), "{tools:?}");

    let chunks = server.run("guarded", BOTH).await;
    let pending = approvals(&chunks);
    let names: Vec<&str> = pending.iter().map(|a| a.tool_name.as_str()).collect();
    assert_eq!(names, ["weather", "echo"]);
    assert_eq!(finish_reason(&chunks), FinishReason::Suspended);
    let id = run_id(&chunks);

    let first = server
        .resume(resume_request(
            &id,
            &pending[0].tool_call_id,
            approval(false, "no network today"),
        ))
        .await
        .unwrap();
    assert_eq!(
        finish_reason(&first),
        FinishReason::Suspended,
        "the MCP call still waits"
    );
    let done = server
        .resume(resume_request(&id, &pending[1].tool_call_id, approval(false, "")))
        .await
        .unwrap();
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    assert_eq!(
        finish(&done).text,
        "The tool reported an error: The user declined this call of weather: no network today \
         The user declined this call of echo"
    );
    assert!(
        http.received("weather").is_empty(),
        "the HTTP tool was never called"
    );
    assert_no_calls(&mcp);
}

#[tokio::test]
async fn approved_calls_run() {
    let http = HttpServer::start().await;
    let mcp = McpHttpServer::start().await;
    let server = guarded(&http, &mcp).await;
    let chunks = server.run("guarded", BOTH).await;
    let pending = approvals(&chunks);
    let id = run_id(&chunks);
    server
        .resume(resume_request(&id, &pending[0].tool_call_id, approval(true, "")))
        .await
        .unwrap();
    let done = server
        .resume(resume_request(&id, &pending[1].tool_call_id, approval(true, "")))
        .await
        .unwrap();
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    assert_eq!(http.received("weather").len(), 1);
    assert_eq!(mcp.calls(), 1);
    assert_eq!(tool_results(&done).last().unwrap().content, "echo: hi");
}
