//! Client-executed tools: a run declares them in StreamAgentRequest.tools
//! (or an agent in agentd.toml, `kind = "client"`); a call suspends the run
//! with `client_tool`; Resume `data` is the result, or an error envelope.

use agentd::grpc::convert::{json_to_struct, struct_to_json};
use agentd::pb::{self, FinishReason};
use serde_json::{json, Value};
use tonic::Code;
use tonic_types::StatusExt;

use super::*;
use crate::configured::{approval, approvals, data};

const LOOKUP: &str = r#"call lookup_order {"order_id": "42"}"#;

fn lookup_order(require_approval: bool) -> pb::ToolDefinition {
    pb::ToolDefinition {
        name: "lookup_order".into(),
        description: "Looks an order up in the caller's database.".into(),
        input_schema: Some(json_to_struct(&json!({
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
            "additionalProperties": false
        }))),
        require_approval,
    }
}

fn request(prompt: &str, tools: Vec<pb::ToolDefinition>) -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        prompt: prompt.into(),
        tools,
        ..Default::default()
    }
}

/// The `client_tool` payload of a suspension: tool name and arguments.
fn client_call(suspended: &pb::ToolCallSuspended) -> (String, Value) {
    match suspended.suspend_payload.as_ref().and_then(|p| p.kind.clone()) {
        Some(pb::suspend_payload::Kind::ClientTool(call)) => {
            (call.tool_name, struct_to_json(&call.args.unwrap_or_default()))
        }
        other => panic!("not a client tool payload: {other:?}"),
    }
}

#[tokio::test]
async fn a_run_tool_suspends_and_resume_data_is_its_result() {
    let server = TestServer::start().await;
    let chunks = server
        .start_run(request(LOOKUP, vec![lookup_order(false)]))
        .await
        .unwrap();
    let suspended = expect_one_suspension(&server, &chunks).await;
    assert_eq!(
        client_call(&suspended),
        ("lookup_order".to_owned(), json!({"order_id": "42"}))
    );
    let id = run_id(&chunks);

    let done = server
        .resume(resume_request(
            &id,
            "",
            data(json!({"status": "shipped", "eta_days": 2})),
        ))
        .await
        .unwrap();
    let result = tool_results(&done).remove(0);
    assert!(!result.is_error);
    assert_eq!(result.content, r#"{"eta_days":2,"status":"shipped"}"#);
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    assert_eq!(
        finish(&done).text,
        r#"The lookup_order tool returned: {"eta_days":2,"status":"shipped"}."#
    );
}

#[tokio::test]
async fn an_error_envelope_is_an_error_result_the_model_sees() {
    let server = TestServer::start().await;
    let chunks = server
        .start_run(request(LOOKUP, vec![lookup_order(false)]))
        .await
        .unwrap();
    let id = run_id(&chunks);

    // is_error must be a boolean: refused, and the run stays as it was.
    let before = server.get_run(&id).await;
    let status = expect_code(
        server
            .resume(resume_request(
                &id,
                "",
                data(json!({"is_error": "yes", "content": "x"})),
            ))
            .await,
        Code::InvalidArgument,
    );
    let bad_request = status.get_details_bad_request().expect("BadRequest");
    assert_eq!(bad_request.field_violations[0].field, "data");
    assert_eq!(server.get_run(&id).await, before);
    // The wrong kind of answer is refused too.
    expect_code(server.resume_text(&id, "shipped").await, Code::InvalidArgument);

    let done = server
        .resume(resume_request(
            &id,
            "",
            data(json!({"is_error": true, "content": "order 42 not found"})),
        ))
        .await
        .unwrap();
    let result = tool_results(&done).remove(0);
    assert!(result.is_error);
    assert_eq!(result.content, "order 42 not found");
    assert_eq!(
        finish(&done).text,
        "The tool reported an error: order 42 not found"
    );
}

#[tokio::test]
async fn arguments_that_break_the_schema_are_an_error_result_without_suspending() {
    let server = TestServer::start().await;
    let chunks = server
        .start_run(request(
            r#"call lookup_order {"order_id": 42}"#,
            vec![lookup_order(false)],
        ))
        .await
        .unwrap();
    assert!(suspensions(&chunks).is_empty());
    let result = tool_results(&chunks).remove(0);
    assert!(result.is_error);
    assert!(
        result
            .content
            .starts_with("Invalid arguments for lookup_order: /order_id:"),
        "{}",
        result.content
    );
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
}

#[tokio::test]
async fn invalid_definitions_are_refused_naming_the_field() {
    let server = TestServer::start().await;
    let named = |name: &str| pb::ToolDefinition {
        name: name.into(),
        ..lookup_order(false)
    };
    let cases = [
        (vec![named("has space")], "tools[0].name"),
        (vec![named("lookup"), named("lookup")], "tools[1].name"),
        (vec![named("ask_user")], "tools[0].name"),
        (
            vec![pb::ToolDefinition {
                input_schema: Some(json_to_struct(
                    &json!({"type": "object", "properties": {"x": {"type": 7}}}),
                )),
                ..named("x")
            }],
            "tools[0].input_schema",
        ),
        (
            vec![pb::ToolDefinition {
                input_schema: Some(json_to_struct(&json!({"type": "string"}))),
                ..named("x")
            }],
            "tools[0].input_schema",
        ),
    ];
    for (tools, field) in cases {
        let status = expect_code(
            server.start_run(request(LOOKUP, tools)).await,
            Code::InvalidArgument,
        );
        let bad_request = status.get_details_bad_request().expect("BadRequest");
        assert_eq!(bad_request.field_violations[0].field, field, "{status:?}");
    }
}

#[tokio::test]
async fn a_run_tool_that_needs_approval_suspends_twice() {
    let server = TestServer::start().await;
    let chunks = server
        .start_run(request(LOOKUP, vec![lookup_order(true)]))
        .await
        .unwrap();
    assert_eq!(approvals(&chunks).len(), 1);
    let id = run_id(&chunks);
    let approved = server
        .resume(resume_request(&id, "", approval(true, "")))
        .await
        .unwrap();
    assert_eq!(kinds(&approved), ["start", "tool_call_suspended", "finish"]);
    let (tool, _) = client_call(&suspensions(&approved)[0]);
    assert_eq!(tool, "lookup_order");
    let done = server
        .resume(resume_request(&id, "", data(json!("shipped"))))
        .await
        .unwrap();
    assert_eq!(tool_results(&done)[0].content, "shipped");
}

#[tokio::test]
async fn run_tools_are_stored_with_the_run_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        let server = TestServer::start_with(settings_in(dir.path())).await;
        let chunks = server
            .start_run(request(LOOKUP, vec![lookup_order(false)]))
            .await
            .unwrap();
        run_id(&chunks)
    };
    let server = TestServer::start_with(settings_in(dir.path())).await;
    // Only a server that knows the run's tools reads the envelope.
    let done = server
        .resume(resume_request(
            &id,
            "",
            data(json!({"is_error": true, "content": "gone"})),
        ))
        .await
        .unwrap();
    let result = tool_results(&done).remove(0);
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.content, "gone");
}

#[tokio::test]
async fn a_configured_client_tool_is_listed_and_suspends() {
    let server = start(
        vec![agent_with("orders", &["ask_user", "lookup_order"])],
        r#"
        [[tools]]
        kind = "client"
        name = "lookup_order"
        description = "Looks an order up."
        input_schema = { type = "object", properties = { order_id = { type = "string" } }, required = ["order_id"] }
        "#,
    )
    .await;
    let tools = server.tools_of("orders").await;
    let lookup = tools.iter().find(|t| t.name == "lookup_order").expect("listed");
    assert_eq!(lookup.source, "client");
    assert_eq!(lookup.description, "Looks an order up.");
    assert_eq!(schema_of(lookup)["required"], json!(["order_id"]));

    let chunks = server.run("orders", LOOKUP).await;
    let (tool, args) = client_call(&suspensions(&chunks)[0]);
    assert_eq!((tool.as_str(), args), ("lookup_order", json!({"order_id": "42"})));

    // Outside a run there is nobody to execute it.
    let outside = server
        .execute("orders", "lookup_order", json!({"order_id": "42"}))
        .await;
    assert!(outside.is_error);
    assert!(
        outside.content.contains("executed by the caller"),
        "{}",
        outside.content
    );
}
