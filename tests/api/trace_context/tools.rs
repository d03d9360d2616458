//! HTTP tools (in a run started by StreamAgent or A2A, or by ExecuteTool)
//! and MCP tools over streamable HTTP are called with the trace context of
//! the request they are called for: the HTTP tool in its request's
//! headers, the MCP tool call in its `params._meta` (as MCP says) and in
//! the headers of the POST that carries it.

use agentd::pb::FinishReason;

use super::*;
use crate::helpers::{finish_reason, tool_results};
use crate::user_tools::http_server::HttpServer;
use crate::user_tools::mcp_server::McpHttpServer;
use crate::user_tools::{agent_with, start};

/// The configuration of an HTTP tool `weather` calling `http`.
fn weather_tool(http: &HttpServer) -> String {
    format!(
        r#"
        [[tools]]
        kind = "http"
        name = "weather"
        url = "{url}"
        "#,
        url = http.url("/weather"),
    )
}

#[tokio::test]
async fn an_http_tool_call_continues_the_runs_trace() {
    let http = HttpServer::start().await;
    let server = start(vec![agent_with("web", &["weather"])], &weather_tool(&http)).await;
    let call = r#"call weather {"city": "Oslo"}"#;
    let chunks = start_traced(&server, "web", call, STARTED, Some(STATE))
        .await
        .expect("StreamAgent");
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert!(!tool_results(&chunks)[0].is_error, "{chunks:?}");

    let untraced = server.run("web", call).await;
    assert_eq!(finish_reason(&untraced), FinishReason::Stop);

    let received = http.received("weather");
    assert_eq!(received.len(), 2);
    assert_continues(received[0].traceparent.as_deref(), STARTED_TRACE, STARTED_PARENT);
    assert_eq!(received[0].tracestate.as_deref(), Some(STATE));
    assert_eq!(received[1].traceparent, None, "a run without a trace context");
    assert_eq!(received[1].tracestate, None);
}

#[tokio::test]
async fn execute_tool_calls_an_http_tool_in_the_requests_trace() {
    let http = HttpServer::start().await;
    let server = start(vec![agent_with("web", &["weather"])], &weather_tool(&http)).await;
    let execute = pb::ExecuteToolRequest {
        tool_name: "weather".into(),
        args: Some(agentd::grpc::convert::json_to_struct(
            &serde_json::json!({"city": "Oslo"}),
        )),
        agent_id: "web".into(),
    };
    let output = server
        .client()
        .execute_tool(traced(execute, STARTED, Some(STATE)))
        .await
        .expect("ExecuteTool")
        .into_inner();
    assert!(!output.is_error, "{output:?}");
    let received = http.received("weather");
    assert_eq!(received.len(), 1);
    assert_continues(received[0].traceparent.as_deref(), STARTED_TRACE, STARTED_PARENT);
    assert_eq!(received[0].tracestate.as_deref(), Some(STATE));
}

#[tokio::test]
async fn an_a2a_message_runs_in_its_requests_trace() {
    use a2a_pb::proto::{
        a2a_service_client::A2aServiceClient, part, Message, Part, Role, SendMessageRequest,
    };

    let http = HttpServer::start().await;
    let server = start(vec![agent_with("web", &["weather"])], &weather_tool(&http)).await;
    let message = Message {
        message_id: "m-1".into(),
        role: Role::User as i32,
        parts: vec![Part {
            content: Some(part::Content::Text(r#"call weather {"city": "Oslo"}"#.into())),
            ..Default::default()
        }],
        ..Default::default()
    };
    let send = SendMessageRequest {
        tenant: "web".into(),
        message: Some(message),
        ..Default::default()
    };
    A2aServiceClient::new(server.channel().await)
        .send_message(traced(send, STARTED, Some(STATE)))
        .await
        .expect("SendMessage");
    let received = http.received("weather");
    assert_eq!(received.len(), 1);
    assert_continues(received[0].traceparent.as_deref(), STARTED_TRACE, STARTED_PARENT);
    assert_eq!(received[0].tracestate.as_deref(), Some(STATE));
}

#[tokio::test]
async fn an_mcp_tool_call_carries_the_runs_trace_in_its_meta_and_headers() {
    let mcp = McpHttpServer::start().await;
    let config = format!(
        r#"
        [[mcp_servers]]
        name = "web"
        url = "{url}"
        timeout = "10s"
        "#,
        url = mcp.url(),
    );
    let server = start(vec![agent_with("web", &["mcp:web"])], &config).await;
    let chunks = start_traced(
        &server,
        "web",
        r#"call echo {"text": "hello"}"#,
        STARTED,
        Some(STATE),
    )
    .await
    .expect("StreamAgent");
    let result = tool_results(&chunks).remove(0);
    assert_eq!(result.content, "echo: hello", "{result:?}");

    let calls = mcp.posts_of("tools/call");
    assert_eq!(calls.len(), 1);
    let (headers, body) = &calls[0];
    let header = |name: &str| headers.get(name).map(|v| v.to_str().expect("ASCII").to_owned());
    let traceparent = header("traceparent");
    assert_continues(traceparent.as_deref(), STARTED_TRACE, STARTED_PARENT);
    assert_eq!(header("tracestate").as_deref(), Some(STATE));
    let meta = &body["params"]["_meta"];
    assert_eq!(meta["traceparent"].as_str(), traceparent.as_deref(), "{body}");
    assert_eq!(meta["tracestate"], STATE, "{body}");
    // Connecting and listing tools happened outside any request's trace.
    let listed = mcp.posts_of("tools/list");
    assert!(!listed.is_empty());
    assert!(listed
        .iter()
        .all(|(headers, _)| !headers.contains_key("traceparent")));
}
