//! gRPC-Web on the listen port: the generated client over tonic-web's
//! client layer, on HTTP/1.1 and on HTTP/2, runs an ask_user cycle and a
//! WatchRuns stream exactly as over gRPC; the text encoding works from
//! hand-framed bytes; API keys, tenants and the request size limit apply
//! as they do to gRPC; and plain HTTP gets HTTP answers, not `HTTP/0.9`.

use agentd::pb::{self, RunEventKind};
use base64::Engine;
use prost::Message;
use tonic::Code;
use tonic_types::StatusExt;

use super::client::{web_client, Http, WebClient};
use crate::helpers::{collect, finish_reason, kinds, run_id, tool_results};
use crate::security::auth::{two_tenants, ACME_KEY, GLOBEX_KEY};
use crate::security::server::{prompt, SecureServer};
use crate::watch_runs::{kinds_of, next_events, watch_request};

async fn stream(client: &mut WebClient, request: pb::StreamAgentRequest) -> Vec<pb::AgentChunk> {
    let response = client.stream_agent(request).await.expect("StreamAgent");
    collect(response.into_inner()).await.expect("the whole stream")
}

fn answer(run_id: &str, text: &str) -> pb::ResumeRequest {
    pb::ResumeRequest {
        run_id: run_id.into(),
        answer: Some(pb::resume_request::Answer::Text(text.into())),
        ..Default::default()
    }
}

async fn ask_user_cycle(http: Http) {
    let server = SecureServer::start(|_, _| {}).await;
    let mut client = web_client(server.addr, http, None);

    let agents = client
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("ListAgents");
    assert!(agents
        .get_ref()
        .agents
        .iter()
        .any(|agent| agent.agent_id == "assistant"));

    let started = stream(&mut client, prompt("Help me pick a plan")).await;
    assert_eq!(
        kinds(&started),
        [
            "start",
            "step_start",
            "tool_call",
            "step_finish",
            "tool_call_suspended",
            "finish"
        ],
        "{http:?}"
    );
    let run_id = run_id(&started);

    // A refusal carries its status and its details (grpc-status-details-bin).
    let refused = client
        .resume(answer(&run_id, "Gold"))
        .await
        .expect_err("Gold is no option");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    let bad = refused.get_details_bad_request().expect("BadRequest details");
    assert_eq!(bad.field_violations[0].field, "text", "{bad:?}");

    let resumed = client.resume(answer(&run_id, "Pro")).await.expect("Resume");
    let resumed = collect(resumed.into_inner()).await.expect("the continuation");
    assert_eq!(tool_results(&resumed)[0].content, "User answered: Pro");
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);

    let run = client
        .get_run(pb::GetRunRequest {
            run_id: run_id.clone(),
        })
        .await
        .expect("GetRun")
        .into_inner();
    assert_eq!(run.status(), pb::RunStatus::Completed);
    let history = client
        .subscribe_run(pb::SubscribeRunRequest { run_id, after_seq: 0 })
        .await
        .expect("SubscribeRun");
    let history = collect(history.into_inner()).await.expect("the history");
    assert_eq!(history.len(), started.len() + resumed.len());
}

#[tokio::test]
async fn an_ask_user_cycle_over_grpc_web_on_http1() {
    ask_user_cycle(Http::One).await;
}

#[tokio::test]
async fn an_ask_user_cycle_over_grpc_web_on_http2() {
    ask_user_cycle(Http::Two).await;
}

#[tokio::test]
async fn watch_runs_streams_over_grpc_web() {
    let server = SecureServer::start(|_, _| {}).await;
    let mut watcher = web_client(server.addr, Http::One, None);
    let mut events = watcher
        .watch_runs(watch_request("", &[], ""))
        .await
        .expect("WatchRuns")
        .into_inner();
    let mut client = server.client(None).await;
    let chunks = crate::security::server::start(&mut client, prompt("free text please"))
        .await
        .expect("a run over gRPC");
    let seen = next_events(&mut events, 2).await;
    assert_eq!(kinds_of(&seen), [RunEventKind::Started, RunEventKind::Suspended]);
    assert_eq!(seen[1].run_id, run_id(&chunks));
    assert_eq!(seen[1].pending[0].tool_name, "ask_user");
}

/// One gRPC-Web message frame: flags, length, the message.
fn frame(message: &impl Message) -> Vec<u8> {
    let body = message.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
    framed.extend_from_slice(&body);
    framed
}

/// The frames of a gRPC-Web response body: (flags, bytes).
fn frames(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut frames = Vec::new();
    while !body.is_empty() {
        let flags = body[0];
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        frames.push((flags, body[5..5 + len].to_vec()));
        body = &body[5 + len..];
    }
    frames
}

#[tokio::test]
async fn grpc_web_text_reaches_the_service() {
    let server = SecureServer::start(|_, _| {}).await;
    let body = base64::engine::general_purpose::STANDARD.encode(frame(&pb::ListAgentsRequest {}));
    let response = crate::helpers::http()
        .post(format!(
            "http://{}/agentd.v1.AgentService/ListAgents",
            server.addr
        ))
        .header("content-type", "application/grpc-web-text")
        .header("accept", "application/grpc-web-text")
        .header("x-grpc-web", "1")
        .body(body)
        .send()
        .await
        .expect("an HTTP/1.1 answer");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/grpc-web-text+proto"
    );
    let text = response.text().await.expect("body");
    // Each piece the server wrote is base64 on its own, padding included.
    let mut bytes = Vec::new();
    for quantum in text.as_bytes().chunks(4) {
        bytes.extend(
            base64::engine::general_purpose::STANDARD
                .decode(quantum)
                .expect("base64"),
        );
    }
    let frames = frames(&bytes);
    assert_eq!(frames.len(), 2, "a message and the trailers");
    let agents = pb::ListAgentsResponse::decode(frames[0].1.as_slice()).expect("the response");
    assert_eq!(agents.agents[0].agent_id, "assistant");
    assert_eq!(frames[1].0, 0x80, "the trailers frame");
    let trailers = String::from_utf8(frames[1].1.clone()).unwrap();
    assert!(trailers.contains("grpc-status:0"), "{trailers}");
}

#[tokio::test]
async fn keys_and_tenants_apply_to_grpc_web() {
    let server = two_tenants().await;
    for key in [None, Some("not-a-key")] {
        let mut anonymous = web_client(server.addr, Http::One, key);
        let refused = anonymous
            .list_runs(pb::ListRunsRequest::default())
            .await
            .expect_err("no valid key");
        assert_eq!(refused.code(), Code::Unauthenticated, "{key:?}: {refused:?}");
        let refused = anonymous
            .stream_agent(prompt("plain hello"))
            .await
            .expect_err("no valid key");
        assert_eq!(refused.code(), Code::Unauthenticated, "{key:?}: {refused:?}");
    }
    let mut acme = web_client(server.addr, Http::One, Some(ACME_KEY));
    let chunks = stream(&mut acme, prompt("Help me pick a plan")).await;
    let run_id = run_id(&chunks);
    // Over gRPC-Web or gRPC, another tenant's run does not exist.
    let mut globex = web_client(server.addr, Http::Two, Some(GLOBEX_KEY));
    let hidden = globex
        .get_run(pb::GetRunRequest {
            run_id: run_id.clone(),
        })
        .await
        .expect_err("another tenant's run");
    assert_eq!(hidden.code(), Code::NotFound);
    let mut globex_grpc = server.client(Some(GLOBEX_KEY)).await;
    let hidden = globex_grpc
        .get_run(pb::GetRunRequest {
            run_id: run_id.clone(),
        })
        .await
        .expect_err("another tenant's run");
    assert_eq!(hidden.code(), Code::NotFound);
    let listed = globex
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("ListRuns")
        .into_inner();
    assert!(listed.runs.is_empty(), "{listed:?}");
    let mine = acme
        .get_run(pb::GetRunRequest { run_id })
        .await
        .expect("its own run")
        .into_inner();
    assert_eq!(mine.status(), pb::RunStatus::Suspended);
}

#[tokio::test]
async fn the_request_size_limit_applies_to_grpc_web() {
    let server = SecureServer::start(|_, settings| settings.limits.max_request_bytes = 2000).await;
    let mut client = web_client(server.addr, Http::One, None);
    let over = client
        .stream_agent(prompt(format!("plain {}", "x".repeat(3000))))
        .await
        .expect_err("over the limit");
    assert_eq!(over.code(), Code::ResourceExhausted, "{over:?}");
    assert!(over.message().contains("limits.max_request_bytes"), "{over:?}");
}

#[tokio::test]
async fn plain_http_is_answered_in_http() {
    let server = SecureServer::start(|_, _| {}).await;
    let http = crate::helpers::http();
    let missing = http
        .get(format!("http://{}/no-such-page", server.addr))
        .send()
        .await
        .expect("an HTTP/1.1 answer");
    assert_eq!(missing.status(), 404);
    // A POST to a service that is neither gRPC nor gRPC-Web.
    let json = http
        .post(format!(
            "http://{}/agentd.v1.AgentService/ListAgents",
            server.addr
        ))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("an HTTP/1.1 answer");
    assert_eq!(json.status(), 400);
}

/// The source of the decisions of a run answered with `answer` over
/// gRPC-Web.
async fn answered_through(client: &mut WebClient, answer: tonic::Request<pb::ResumeRequest>) -> pb::Run {
    let run_id = answer.get_ref().run_id.clone();
    let continued = client.resume(answer).await.expect("Resume");
    collect(continued.into_inner()).await.expect("the continuation");
    client
        .get_run(pb::GetRunRequest { run_id })
        .await
        .expect("GetRun")
        .into_inner()
}

#[tokio::test]
async fn answers_over_grpc_web_are_grpc_web_and_the_inbox_s_are_the_inbox_s() {
    let server = SecureServer::start(|_, _| {}).await;
    let mut client = web_client(server.addr, Http::One, None);

    let plain = run_id(&stream(&mut client, prompt("Help me pick a plan")).await);
    let run = answered_through(&mut client, tonic::Request::new(answer(&plain, "Pro"))).await;
    assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
    assert_eq!(run.decisions[0].source(), pb::DecisionSource::GrpcWeb);
    // An open server without mutual TLS knows no name.
    assert_eq!(run.decisions[0].decided_by, "");

    let inbox = run_id(&stream(&mut client, prompt("Help me pick a plan")).await);
    let mut marked = tonic::Request::new(answer(&inbox, "Pro"));
    marked
        .metadata_mut()
        .insert("x-agentd-client", "inbox".parse().unwrap());
    let run = answered_through(&mut client, marked).await;
    assert_eq!(run.decisions[0].source(), pb::DecisionSource::Inbox);
}
