//! A store that refuses writes (a full disk, a broken one): every client
//! gets a status before any chunk, or, once its stream has chunks, an
//! `error` chunk with code `store_unavailable` and `finish{ERROR}`; a
//! refused Resume leaves the run as it was; health says NOT_SERVING at once
//! and SERVING again once the store accepts writes; and no run a client saw
//! is lost: recovery continues it then. Through a store whose failures the
//! test injects, and through a real server on a small, really full disk.

use std::time::Duration;

use agentd::pb::agent_chunk::Chunk;
use agentd::pb::{self, FinishReason, RunStatus};
use agentd::runtime::{LeaseSettings, RuntimeConfig};
use agentd::store::StoreError;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

use crate::controlled_store::ControlledStore;
use crate::health::wait_for;
use crate::helpers::{assert_segment, collect, expect_code, finish_reason, run_id, status_of, TestServer};
use crate::process::{get_run, stream_prompt, ServerProcess};

fn broken() -> StoreError {
    StoreError::Backend("disk I/O error".into())
}

async fn health_watch(server: &TestServer) -> tonic::Streaming<tonic_health::pb::HealthCheckResponse> {
    let mut health = HealthClient::new(server.channel().await);
    let request = HealthCheckRequest {
        service: "agentd.v1.AgentService".into(),
    };
    health.watch(request).await.expect("Watch").into_inner()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_refuses_writes_is_a_status_before_any_chunk_and_health_follows_it() {
    let config = RuntimeConfig {
        // Long: the refused write itself must flip health, not a tick.
        health_check_interval: Duration::from_secs(3600),
        ..RuntimeConfig::default()
    };
    let (server, store, _temp) = ControlledStore::serve(config).await;
    let suspended_id = run_id(&server.stream("pick a plan").await);
    let suspended = server.get_run(&suspended_id).await;
    let mut watch = health_watch(&server).await;
    wait_for(&mut watch, ServingStatus::Serving).await;

    store.refuse(Some(broken()));
    let refused = expect_code(server.start_run(prompt("pick a plan")).await, Code::Unavailable);
    assert!(refused.message().contains("disk I/O error"), "{refused:?}");
    expect_code(server.resume_text(&suspended_id, "Pro").await, Code::Unavailable);
    assert_eq!(
        server.get_run(&suspended_id).await,
        suspended,
        "a refused Resume changes nothing"
    );
    wait_for(&mut watch, ServingStatus::NotServing).await;

    store.refuse(Some(StoreError::Full("database or disk is full".into())));
    expect_code(
        server.start_run(prompt("pick a plan")).await,
        Code::ResourceExhausted,
    );
    expect_code(
        server.resume_text(&suspended_id, "Pro").await,
        Code::ResourceExhausted,
    );
    assert_eq!(server.get_run(&suspended_id).await, suspended);

    store.refuse(None);
    wait_for(&mut watch, ServingStatus::Serving).await;
    let resumed = server.resume_text(&suspended_id, "Pro").await.expect("Resume");
    assert_segment(&resumed);
    assert_eq!(finish_reason(&resumed), FinishReason::Stop);
    let started = server.stream("pick a plan").await;
    assert_segment(&started);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_refuses_writes_mid_stream_ends_it_with_an_error_and_a_finish() {
    let config = RuntimeConfig {
        health_check_interval: Duration::from_millis(100),
        lease: LeaseSettings {
            ttl: Duration::from_millis(400),
            renew_every: Duration::from_millis(100),
            recovery_interval: Duration::from_millis(100),
            ..LeaseSettings::default()
        },
        ..RuntimeConfig::default()
    };
    let (server, store, _temp) = ControlledStore::serve(config).await;
    // A slow step: the run is written at the deadline (its `start` stored
    // and streamed); the appends of the step's chunks wait, then fail.
    store.hold(true);
    let mut stream = server
        .client()
        .stream_agent(prompt("stream 3 every 100ms"))
        .await
        .expect("StreamAgent")
        .into_inner();
    let start = stream.message().await.expect("a chunk").expect("start");
    assert!(matches!(start.chunk, Some(Chunk::Start(_))), "{start:?}");
    store.wait_for_writes(1).await;
    store.refuse(Some(broken()));
    store.hold(false);
    let mut chunks = vec![start];
    chunks.extend(collect(stream).await.expect("the stream closes with OK"));
    assert_segment(&chunks);
    assert_eq!(finish_reason(&chunks), FinishReason::Error);
    let error = match &chunks[chunks.len() - 2].chunk {
        Some(Chunk::Error(error)) => error.clone(),
        other => panic!("an error chunk before the finish, not {other:?}"),
    };
    assert_eq!(error.code, "store_unavailable");
    let last_stored = chunks[chunks.len() - 2].seq - 1;
    assert!(
        error.message.contains(&format!("after_seq {last_stored}")),
        "{error:?}"
    );
    let id = run_id(&chunks);
    assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Running);

    // Once the store accepts writes, recovery continues the run from what
    // was stored, and a subscriber from there sees it through.
    store.refuse(None);
    let mut client = server.client();
    let request = pb::SubscribeRunRequest {
        run_id: id.clone(),
        after_seq: last_stored,
    };
    let followed = tokio::time::timeout(Duration::from_secs(20), async {
        let stream = client.subscribe_run(request).await?.into_inner();
        collect(stream).await
    })
    .await
    .expect("the run went on in time")
    .expect("SubscribeRun");
    assert_segment(&followed);
    assert_eq!(followed[0].seq, last_stored + 1);
    assert_eq!(finish_reason(&followed), FinishReason::Stop);
    assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Completed);
}

/// A real server on a real full disk: a small tmpfs of its own, filled up
/// from outside and freed again.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs unshare -rm (user and mount namespaces) to give the server a small tmpfs; .ci/run runs it"]
async fn a_server_on_a_full_disk_refuses_before_any_chunk_and_goes_on_once_space_is_freed() {
    let mount = tempfile::tempdir().expect("temp dir");
    let server = ServerProcess::start_in_tmpfs(mount.path(), 8);
    let mut client = server.client().await;
    let waiting = run_id(&stream_prompt(&mut client, "pick a plan").await);
    let suspended = get_run(&mut client, &waiting).await;
    let mut health = HealthClient::new(server.channel().await);
    let request = HealthCheckRequest {
        service: "agentd.v1.AgentService".into(),
    };
    let mut watch = health.watch(request).await.expect("Watch").into_inner();
    wait_for(&mut watch, ServingStatus::Serving).await;

    let filler = server.in_mount(&mount.path().join("filler"));
    fill(&filler);
    // SQLite may still reuse room in its WAL for a write or two; then the
    // disk is full for it too.
    let mut acknowledged = vec![waiting.clone()];
    let mut refusals = 0;
    for _ in 0..50 {
        match server.client().await.stream_agent(prompt("pick a plan")).await {
            Ok(response) => {
                let chunks = collect(response.into_inner())
                    .await
                    .expect("the stream closes with OK");
                assert_segment(&chunks);
                if finish_reason(&chunks) == FinishReason::Suspended {
                    acknowledged.push(run_id(&chunks));
                }
            }
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                assert!(status.message().contains("full"), "{status:?}");
                refusals += 1;
                if refusals == 3 {
                    break;
                }
            }
        }
    }
    assert_eq!(refusals, 3, "a full disk refuses new runs");
    match server.client().await.resume(resume_text(&waiting, "Pro")).await {
        Err(status) => {
            assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
            assert_eq!(
                get_run(&mut client, &waiting).await,
                suspended,
                "a refused Resume changes nothing"
            );
        }
        Ok(response) => assert_segment(&collect(response.into_inner()).await.expect("OK")),
    }
    wait_for(&mut watch, ServingStatus::NotServing).await;

    std::fs::remove_file(&filler).expect("free the disk");
    wait_for(&mut watch, ServingStatus::Serving).await;
    for id in &acknowledged {
        let run = get_run(&mut client, id).await;
        assert!(
            matches!(status_of(&run), RunStatus::Suspended | RunStatus::Completed),
            "an acknowledged run is kept: {run:?}"
        );
    }
    let chunks = stream_prompt(&mut client, "pick a plan").await;
    assert_segment(&chunks);
    assert_eq!(finish_reason(&chunks), FinishReason::Suspended);
}

/// Writes zeros to `path` until its filesystem is full.
fn fill(path: &std::path::Path) {
    use std::io::Write;
    let mut file = std::fs::File::create(path).expect("the filler");
    let block = vec![0u8; 64 * 1024];
    loop {
        if let Err(error) = file.write_all(&block).and_then(|()| file.sync_all()) {
            assert_eq!(error.raw_os_error(), Some(28), "filled up: {error}");
            return;
        }
    }
}

fn resume_text(run_id: &str, text: &str) -> pb::ResumeRequest {
    crate::helpers::resume_request(run_id, "", pb::resume_request::Answer::Text(text.into()))
}

fn prompt(text: &str) -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        prompt: text.into(),
        ..Default::default()
    }
}
