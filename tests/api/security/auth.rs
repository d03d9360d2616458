//! API keys: every agent service RPC refuses a missing, malformed or wrong
//! key with UNAUTHENTICATED and serves the right one; health and reflection
//! stay open unless configured otherwise.

use agentd::pb;
use tokio_stream::StreamExt;
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_types::StatusExt;

use super::server::{keyed, write_file, Bearer, KeyedClient, SecureServer};
use crate::helpers::collect;

pub(crate) const ACME_KEY: &str = "acme-key-6f1d0c3a9b2e4d57";
pub(crate) const GLOBEX_KEY: &str = "globex-key-0a8e7c6b5d4f3a21";

/// A server with two tenants, `acme` and `globex`.
pub(crate) async fn two_tenants() -> SecureServer {
    SecureServer::with_keys(&format!("# tenant:key\nacme:{ACME_KEY}\nglobex:{GLOBEX_KEY}\n")).await
}

const A_RUN_ID: &str = "0190a0b0-c0d0-7e00-8000-000000000001";

/// Calls every RPC of the agent service once; the status of each, by name.
async fn call_every_rpc(client: &mut KeyedClient) -> Vec<(&'static str, Result<(), Status>)> {
    fn done<T>(result: Result<T, Status>) -> Result<(), Status> {
        result.map(|_| ())
    }
    let mut results = Vec::new();
    let stream = client
        .stream_agent(pb::StreamAgentRequest {
            prompt: "plain hello".into(),
            ..Default::default()
        })
        .await;
    let stream = match stream {
        Ok(response) => collect(response.into_inner()).await.map(|_| ()),
        Err(status) => Err(status),
    };
    results.push(("StreamAgent", stream));
    let resume = pb::ResumeRequest {
        run_id: A_RUN_ID.into(),
        answer: Some(pb::resume_request::Answer::Text("x".into())),
        ..Default::default()
    };
    results.push(("Resume", done(client.resume(resume).await)));
    let subscribe = pb::SubscribeRunRequest {
        run_id: A_RUN_ID.into(),
        after_seq: 0,
    };
    results.push(("SubscribeRun", done(client.subscribe_run(subscribe).await)));
    let get = pb::GetRunRequest {
        run_id: A_RUN_ID.into(),
    };
    results.push(("GetRun", done(client.get_run(get).await)));
    results.push((
        "ListRuns",
        done(client.list_runs(pb::ListRunsRequest::default()).await),
    ));
    let cancel = pb::CancelRunRequest {
        run_id: A_RUN_ID.into(),
        reason: String::new(),
    };
    results.push(("CancelRun", done(client.cancel_run(cancel).await)));
    results.push((
        "ListAgents",
        done(client.list_agents(pb::ListAgentsRequest {}).await),
    ));
    let execute = pb::ExecuteToolRequest {
        tool_name: "ask_user".into(),
        args: Some(agentd::grpc::convert::json_to_struct(
            &serde_json::json!({"question": "Q?"}),
        )),
        agent_id: String::new(),
    };
    results.push(("ExecuteTool", done(client.execute_tool(execute).await)));
    let thread = pb::GetThreadRequest {
        thread_id: "some-thread".into(),
    };
    results.push(("GetThread", done(client.get_thread(thread).await)));
    results.push((
        "ListThreads",
        done(client.list_threads(pb::ListThreadsRequest::default()).await),
    ));
    let delete = pb::DeleteThreadRequest {
        thread_id: "some-thread".into(),
    };
    results.push(("DeleteThread", done(client.delete_thread(delete).await)));
    results
}

#[tokio::test]
async fn missing_malformed_and_wrong_keys_are_unauthenticated_on_every_rpc() {
    let server = two_tenants().await;
    let wrong_keys = [
        None,
        Some("acme-key-6f1d0c3a9b2e4d5"),   // one character short
        Some("acme-key-6f1d0c3a9b2e4d570"), // one too many
        Some("ACME-KEY-6F1D0C3A9B2E4D57"),
        Some("x"),
    ];
    for key in wrong_keys {
        let mut client = server.client(key).await;
        for (rpc, result) in call_every_rpc(&mut client).await {
            let status = result.expect_err(&format!("{rpc} with key {key:?} must be refused"));
            assert_eq!(
                status.code(),
                Code::Unauthenticated,
                "{rpc} with {key:?}: {status:?}"
            );
            assert!(
                !status.message().contains("acme-key"),
                "the key is not echoed: {status:?}"
            );
            let reason = status.get_details_error_info().expect("ErrorInfo").reason;
            let expected = if key.is_none() {
                "MISSING_CREDENTIALS"
            } else {
                "INVALID_API_KEY"
            };
            assert_eq!(reason, expected, "{rpc} with {key:?}");
        }
    }

    // Not a bearer token at all.
    let channel = server.channel().await;
    let mut basic = pb::agent_service_client::AgentServiceClient::with_interceptor(
        channel,
        |mut request: tonic::Request<()>| {
            request
                .metadata_mut()
                .insert("authorization", "Basic YWNtZTpzZWNyZXQ=".parse().unwrap());
            Ok(request)
        },
    );
    let status = basic.list_agents(pb::ListAgentsRequest {}).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    assert_eq!(
        status.get_details_error_info().unwrap().reason,
        "MALFORMED_CREDENTIALS"
    );
}

#[tokio::test]
async fn the_right_key_is_served_on_every_rpc() {
    let server = two_tenants().await;
    for key in [ACME_KEY, GLOBEX_KEY] {
        let mut client = server.client(Some(key)).await;
        for (rpc, result) in call_every_rpc(&mut client).await {
            match (rpc, result) {
                ("StreamAgent" | "ListRuns" | "ListAgents" | "ExecuteTool" | "ListThreads", Ok(())) => {}
                // The run or thread does not exist: authenticated, then not found.
                (
                    "Resume" | "SubscribeRun" | "GetRun" | "CancelRun" | "GetThread" | "DeleteThread",
                    Err(status),
                ) => {
                    assert_eq!(status.code(), Code::NotFound, "{rpc}: {status:?}")
                }
                (rpc, other) => panic!("{rpc} with the right key: {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn tenants_can_take_keys_from_their_own_files() {
    let server = SecureServer::start(|dir, settings| {
        let file = write_file(
            dir,
            "initech.keys",
            "# rotated monthly\ninitech-key-1111111111\ninitech-key-2222222222\n",
        );
        settings.tenants = vec![agentd::auth::TenantConfig {
            id: "initech".into(),
            api_keys_env: None,
            api_keys_file: Some(file),
            api_key_name: None,
        }];
    })
    .await;
    for key in ["initech-key-1111111111", "initech-key-2222222222"] {
        let mut client = server.client(Some(key)).await;
        client
            .list_agents(pb::ListAgentsRequest {})
            .await
            .expect("a key of the file");
    }
    let mut stranger = server.client(Some("initech-key-3333333333")).await;
    let status = stranger.list_agents(pb::ListAgentsRequest {}).await.unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
}

async fn health_status(server: &SecureServer, key: Option<&str>) -> Result<ServingStatus, Status> {
    let channel = server.channel().await;
    let mut health = HealthClient::with_interceptor(channel, Bearer(key.map(str::to_owned)));
    let response = health
        .check(HealthCheckRequest {
            service: "agentd.v1.AgentService".into(),
        })
        .await?;
    Ok(response.into_inner().status())
}

async fn reflection_lists(server: &SecureServer, key: Option<&str>) -> Result<(), Status> {
    let channel = server.channel().await;
    let mut reflection = ServerReflectionClient::with_interceptor(channel, Bearer(key.map(str::to_owned)));
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = reflection
        .server_reflection_info(tokio_stream::once(request))
        .await?
        .into_inner();
    responses.next().await.expect("a reflection response")?;
    Ok(())
}

#[tokio::test]
async fn health_and_reflection_are_open_by_default() {
    let server = two_tenants().await;
    assert_eq!(
        health_status(&server, None).await.unwrap(),
        ServingStatus::Serving
    );
    reflection_lists(&server, None)
        .await
        .expect("reflection without a key");
}

#[tokio::test]
async fn health_and_reflection_can_require_a_key() {
    let server = SecureServer::start(|dir, settings| {
        settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &format!("acme:{ACME_KEY}\n")));
        settings.auth.authenticate_health = true;
        settings.auth.authenticate_reflection = true;
    })
    .await;
    let refused = health_status(&server, None).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    let refused = reflection_lists(&server, Some("wrong-key-000000000"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert_eq!(
        health_status(&server, Some(ACME_KEY)).await.unwrap(),
        ServingStatus::Serving
    );
    reflection_lists(&server, Some(ACME_KEY))
        .await
        .expect("reflection with a key");
}

#[tokio::test]
async fn a_server_without_keys_serves_everyone() {
    let server = SecureServer::start(|_, _| {}).await;
    for key in [None, Some("anything-at-all")] {
        let mut client = keyed(server.channel().await, key);
        client
            .list_agents(pb::ListAgentsRequest {})
            .await
            .expect("open server");
    }
}

/// The real binary says at startup whether it is open, and never logs a
/// key it loaded.
#[tokio::test]
async fn the_startup_log_says_who_may_call() {
    let data = tempfile::tempdir().expect("temp dir");
    let open = crate::process::ServerProcess::start_with(data.path(), &[], &[]);
    let log = open
        .wait_for_log(|log| log.contains("no API keys configured"))
        .await;
    assert!(
        log.lines()
            .any(|line| line.contains("WARN") && line.contains("no API keys configured")),
        "a warning: {log}"
    );
    drop(open);

    let keys = write_file(
        data.path(),
        "api.keys",
        &format!("acme:{ACME_KEY}\nglobex:{GLOBEX_KEY}\n"),
    );
    let keys = keys.to_str().expect("a UTF-8 path");
    let closed = crate::process::ServerProcess::start_with(data.path(), &["--api-keys-file", keys], &[]);
    let log = closed.wait_for_log(|log| log.contains("API keys required")).await;
    assert!(log.contains("acme") && log.contains("globex"), "{log}");
    assert!(
        !log.contains(ACME_KEY) && !log.contains(GLOBEX_KEY),
        "a key was logged:\n{log}"
    );
}
