//! The service around the runs: agents, tools outside a run, health and
//! reflection.

use agentd::pb;
use tokio_stream::StreamExt;
use tonic::Code;

use crate::helpers::*;

fn args(json: serde_json::Value) -> prost_types::Struct {
    agentd::grpc::convert::json_to_struct(&json)
}

async fn execute(
    server: &TestServer,
    tool: &str,
    json: serde_json::Value,
) -> Result<pb::ExecuteToolResponse, tonic::Status> {
    let request = pb::ExecuteToolRequest {
        tool_name: tool.into(),
        args: Some(args(json)),
        agent_id: String::new(),
    };
    server
        .client()
        .execute_tool(request)
        .await
        .map(|r| r.into_inner())
}

#[tokio::test]
async fn execute_tool_gives_ask_user_fallback_text() {
    let server = TestServer::start().await;
    let free = execute(&server, "ask_user", serde_json::json!({"question": "Your name?"}))
        .await
        .unwrap();
    assert_eq!(
        free,
        pb::ExecuteToolResponse {
            content: "[Question for user]: Your name?".into(),
            is_error: false
        }
    );

    let with_options = serde_json::json!({
        "question": "Which plan?",
        "options": [{"label": "Basic"}, {"label": "Pro", "description": "More"}]
    });
    let single = execute(&server, "ask_user", with_options).await.unwrap();
    assert_eq!(
        single.content,
        "[Question for user]: Which plan?\nOptions: Basic, Pro\nSelection mode: single_select"
    );

    let multi = serde_json::json!({
        "question": "Toppings?",
        "options": [{"label": "a"}, {"label": "b"}],
        "selectionMode": "multi_select"
    });
    let multi = execute(&server, "ask_user", multi).await.unwrap();
    assert!(multi.content.ends_with("\nSelection mode: multi_select"));
}

#[tokio::test]
async fn execute_tool_reports_invalid_input_and_unknown_tools() {
    let server = TestServer::start().await;
    let invalid = execute(
        &server,
        "ask_user",
        serde_json::json!({"question": "Q", "selectionMode": "single_select"}),
    )
    .await
    .unwrap();
    assert!(invalid.is_error);
    assert_eq!(
        invalid.content,
        "Failed to ask user: selectionMode requires options."
    );

    let empty = execute(&server, "ask_user", serde_json::json!({"question": ""}))
        .await
        .unwrap();
    assert!(empty.is_error);
    assert_eq!(empty.content, "Failed to ask user: question must not be empty.");

    let schema = execute(&server, "ask_user", serde_json::json!({"options": 3}))
        .await
        .unwrap();
    assert!(schema.is_error);
    assert!(
        schema.content.starts_with("Invalid arguments for ask_user:"),
        "{}",
        schema.content
    );

    expect_code(
        execute(&server, "launch_rockets", serde_json::json!({})).await,
        Code::NotFound,
    );
    expect_code(
        execute(&server, "", serde_json::json!({})).await,
        Code::InvalidArgument,
    );
}

#[tokio::test]
async fn list_agents_shows_the_default_assistant_and_ask_user_schema() {
    let server = TestServer::start().await;
    let agents = server
        .client()
        .list_agents(pb::ListAgentsRequest {})
        .await
        .unwrap()
        .into_inner()
        .agents;
    assert_eq!(agents.len(), 1);
    let assistant = &agents[0];
    assert_eq!(assistant.agent_id, "assistant");
    assert!(assistant.is_default);
    assert_eq!(assistant.model, "scripted");
    assert_eq!(assistant.tools[0].name, "ask_user");
    assert_eq!(assistant.tools[0].source, "builtin");
    let schema = agentd::grpc::convert::struct_to_json(assistant.tools[0].input_schema.as_ref().unwrap());
    assert_eq!(schema["required"], serde_json::json!(["question"]));
    assert_eq!(
        schema["properties"]["selectionMode"]["enum"],
        serde_json::json!(["single_select", "multi_select"])
    );
}

#[tokio::test]
async fn health_reports_serving() {
    let server = TestServer::start().await;
    let channel = server.channel().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    for service in ["", "agentd.v1.AgentService"] {
        let response = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            response.status(),
            tonic_health::pb::health_check_response::ServingStatus::Serving
        );
    }
}

#[tokio::test]
async fn reflection_v1_lists_the_services() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;

    let server = TestServer::start().await;
    let channel = server.channel().await;
    let mut reflection = ServerReflectionClient::new(channel);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = reflection
        .server_reflection_info(tokio_stream::once(request))
        .await
        .unwrap()
        .into_inner();
    let response = responses.next().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("unexpected reflection response: {response:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"agentd.v1.AgentService".to_owned()), "{names:?}");
    assert!(names.contains(&"grpc.health.v1.Health".to_owned()), "{names:?}");
    assert!(names.contains(&"lf.a2a.v1.A2AService".to_owned()), "{names:?}");
}
