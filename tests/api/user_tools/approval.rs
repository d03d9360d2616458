//! Approval with tools users bring: a declined call of an HTTP tool and of
//! an MCP tool never reaches the server; an approved one does; ExecuteTool
//! obeys the same approval.

use agentd::agent::{ApprovalRuleSpec, RuleDecision, ToolEntry, ToolTable};
use agentd::pb::FinishReason;
use tonic_types::StatusExt;

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

/// An HTTP tool whose every call waits for approval, with rules that
/// decline, ask for and approve some of them, on agent `gated`.
async fn gated_weather(http: &HttpServer) -> ToolServer {
    let rule = |when: &str, then, reason: &str| ApprovalRuleSpec {
        when: when.into(),
        then,
        reason: reason.into(),
    };
    let weather = ToolEntry::Table(ToolTable {
        name: "weather".into(),
        require_approval: true,
        approval_rules: vec![
            rule(
                "args.city == 'Pyongyang'",
                RuleDecision::Decline,
                "no forecasts there",
            ),
            rule("args.city == 'Atlantis'", RuleDecision::Ask, ""),
            rule("args.city == 'Oslo'", RuleDecision::Approve, "harmless"),
        ],
        ..ToolTable::default()
    });
    start(
        vec![agent("gated", vec![weather])],
        &format!(
            r#"
            [[tools]]
            kind = "http"
            name = "weather"
            url = "{weather}"
            "#,
            weather = http.url("/weather"),
        ),
    )
    .await
}

/// ExecuteTool of `weather` for `city` on agent `gated`.
async fn execute_weather(server: &ToolServer, city: &str) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    server
        .client()
        .execute_tool(pb::ExecuteToolRequest {
            tool_name: "weather".into(),
            args: Some(agentd::grpc::convert::json_to_struct(
                &serde_json::json!({"city": city}),
            )),
            agent_id: "gated".into(),
        })
        .await
        .map(tonic::Response::into_inner)
}

/// ExecuteTool holds a call to the approval a run would: a call that
/// would wait for a person (require_approval, or a rule that asks) is
/// FAILED_PRECONDITION `APPROVAL_REQUIRED`, a rule's decline is
/// FAILED_PRECONDITION `APPROVAL_DECLINED` with its reason; neither reaches
/// the HTTP server. A rule's approval lets the call through.
#[tokio::test]
async fn execute_tool_obeys_the_approval_a_run_would() {
    let http = HttpServer::start().await;
    let server = gated_weather(&http).await;

    for (city, reason, said) in [
        ("Bergen", "APPROVAL_REQUIRED", "require_approval"),
        ("Atlantis", "APPROVAL_REQUIRED", "gated/weather/rules[1] asks"),
        ("Pyongyang", "APPROVAL_DECLINED", "no forecasts there"),
    ] {
        let refused = execute_weather(&server, city).await.expect_err("refused");
        assert_eq!(
            refused.code(),
            tonic::Code::FailedPrecondition,
            "{city}: {refused:?}"
        );
        let info = refused.get_details_error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, reason, "{city}: {refused:?}");
        assert_eq!(info.metadata["tool_name"], "weather");
        assert!(refused.message().contains(said), "{city}: {}", refused.message());
        if reason == "APPROVAL_DECLINED" {
            assert_eq!(info.metadata["rule"], "gated/weather/rules[0]");
            assert_eq!(info.metadata["reason"], "no forecasts there");
        }
    }
    assert!(
        http.received("weather").is_empty(),
        "no refused call reached the HTTP server"
    );

    let approved = execute_weather(&server, "Oslo")
        .await
        .expect("approved by its rule");
    assert!(!approved.is_error, "{approved:?}");
    let received = http.received("weather");
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body, r#"{"city":"Oslo"}"#);
}
