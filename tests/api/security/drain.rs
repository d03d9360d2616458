//! Draining shutdown: after the signal, health is NOT_SERVING, new streams
//! are refused with UNAVAILABLE, open streams go on for the drain period
//! and are then ended with UNAVAILABLE; a run still executing is left in
//! the store as RUNNING for a restart (or another replica) to take over.
//! In process, and with the real binary and SIGTERM.

use std::time::{Duration, Instant};

use agentd::domain::RunStatus;
use agentd::pb;
use agentd::store::{RunStore, SqliteStore};
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;
use tonic_types::StatusExt;

use super::auth::ACME_KEY;
use super::server::{keyed, write_file, KeyedClient, SecureServer};
use crate::helpers::{collect, finish_reason, run_id, status_of};
use crate::process::ServerProcess;

/// Polls the health of the agent service until it is `wanted` (at most 10 s).
async fn wait_for_health(channel: tonic::transport::Channel, wanted: ServingStatus) {
    let mut health = HealthClient::new(channel);
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let status = health
            .check(HealthCheckRequest {
                service: "agentd.v1.AgentService".into(),
            })
            .await
            .expect("health check")
            .into_inner()
            .status();
        if status == wanted {
            return;
        }
        assert!(Instant::now() < give_up, "health never became {wanted:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn assert_unavailable(status: &Status, reason: &str) {
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_eq!(
        status.get_details_error_info().expect("ErrorInfo").reason,
        reason,
        "{status:?}"
    );
}

/// StreamAgent, Resume, SubscribeRun and WatchRuns are all refused while
/// draining.
async fn assert_new_streams_refused(client: &mut KeyedClient, run: &str) {
    let refused = client
        .stream_agent(pb::StreamAgentRequest {
            prompt: "plain".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_unavailable(&refused, "SERVER_DRAINING");
    let resume = pb::ResumeRequest {
        run_id: run.into(),
        answer: Some(pb::resume_request::Answer::Text("Pro".into())),
        ..Default::default()
    };
    assert_unavailable(&client.resume(resume).await.unwrap_err(), "SERVER_DRAINING");
    let subscribe = pb::SubscribeRunRequest {
        run_id: run.into(),
        after_seq: 0,
    };
    assert_unavailable(
        &client.subscribe_run(subscribe).await.unwrap_err(),
        "SERVER_DRAINING",
    );
    assert_unavailable(
        &client
            .watch_runs(pb::WatchRunsRequest::default())
            .await
            .unwrap_err(),
        "SERVER_DRAINING",
    );
}

#[tokio::test]
async fn draining_refuses_new_streams_and_ends_open_ones_after_the_period() {
    let mut server = SecureServer::start_draining(Duration::from_millis(1500), |_, _| {}).await;
    let mut client = server.client(None).await;
    let opening = collect(
        client
            .stream_agent(pb::StreamAgentRequest {
                prompt: "Help me pick a plan".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner(),
    )
    .await
    .unwrap();
    let run = run_id(&opening);
    // A subscription waiting for the suspended run's continuation.
    let mut waiting = client
        .subscribe_run(pb::SubscribeRunRequest {
            run_id: run.clone(),
            after_seq: opening.last().unwrap().seq,
        })
        .await
        .expect("SubscribeRun")
        .into_inner();

    let signalled = Instant::now();
    server.signal_shutdown();
    wait_for_health(server.channel().await, ServingStatus::NotServing).await;
    assert_new_streams_refused(&mut client, &run).await;
    // Unary calls are still served while draining.
    let stored = client
        .get_run(pb::GetRunRequest { run_id: run.clone() })
        .await
        .expect("GetRun while draining")
        .into_inner();
    assert_eq!(status_of(&stored), pb::RunStatus::Suspended);

    // The open stream lasts the drain period, then ends with UNAVAILABLE.
    let ended = waiting
        .message()
        .await
        .expect_err("the stream ends with a status");
    assert!(
        signalled.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        signalled.elapsed()
    );
    assert_unavailable(&ended, "SERVER_SHUTDOWN");
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops after the drain");

    // Nothing changed the suspended run.
    let store = SqliteStore::open(server.dir.path().join("agentd.sqlite3")).expect("store");
    let stored = store.load_run(run.parse().unwrap()).await.expect("the run");
    assert_eq!(stored.status(), RunStatus::Suspended);
}

#[tokio::test]
async fn a_stream_that_ends_within_the_drain_period_ends_normally() {
    let mut server = SecureServer::start_draining(Duration::from_secs(20), |_, _| {}).await;
    let mut client = server.client(None).await;
    let stream = client
        .stream_agent(pb::StreamAgentRequest {
            prompt: "stream 3000".into(),
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
        .into_inner();
    let signalled = Instant::now();
    server.signal_shutdown();
    let chunks = collect(stream)
        .await
        .expect("the stream finishes during the drain");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
    // With nothing left open, the server stops well before the period ends.
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops once idle");
    assert!(
        signalled.elapsed() < Duration::from_secs(15),
        "{:?}",
        signalled.elapsed()
    );
}

/// A WatchRuns stream never ends by itself: the drain ends it at once
/// (the watcher continues after its last cursor elsewhere), so that it
/// does not hold the server for the whole period.
#[tokio::test]
async fn draining_ends_watchers_at_once() {
    let mut server = SecureServer::start_draining(Duration::from_secs(20), |_, _| {}).await;
    let mut client = server.client(None).await;
    let mut watching = client
        .watch_runs(pb::WatchRunsRequest::default())
        .await
        .expect("WatchRuns")
        .into_inner();
    let signalled = Instant::now();
    server.signal_shutdown();
    let ended = watching
        .message()
        .await
        .expect_err("the watch ends with a status");
    assert_unavailable(&ended, "SERVER_SHUTDOWN");
    assert!(ended.message().contains("WatchRuns"), "{}", ended.message());
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops once idle");
    assert!(
        signalled.elapsed() < Duration::from_secs(15),
        "{:?}",
        signalled.elapsed()
    );
}

/// The real binary: SIGTERM while a run streams. The stream goes on for
/// the drain period, new streams are refused, and the run, still
/// executing when the period ends, stays RUNNING in the store although it
/// asked to be cancelled when its client leaves (the server leaving is not
/// the client leaving).
#[tokio::test]
async fn sigterm_during_a_live_stream() {
    let data = tempfile::tempdir().expect("temp dir");
    let keys = write_file(data.path(), "api.keys", &format!("acme:{ACME_KEY}\n"));
    let keys = keys.to_str().expect("a UTF-8 path");
    let mut process = ServerProcess::start_with(
        data.path(),
        &["--drain-timeout", "2s"],
        &[("AGENTD_API_KEYS_FILE", keys)],
    );
    let channel = process.channel().await;
    let mut client = keyed(channel.clone(), Some(ACME_KEY));
    let mut stream = client
        .stream_agent(pb::StreamAgentRequest {
            prompt: "stream 1000000".into(),
            options: Some(pb::RunOptions {
                on_disconnect: pb::DisconnectPolicy::Cancel as i32,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
        .into_inner();
    let first = stream.message().await.expect("a chunk").expect("a chunk");
    let run = first.run_id.clone();

    process.send_sigterm();
    wait_for_health(channel.clone(), ServingStatus::NotServing).await;
    let before = Instant::now();
    assert_new_streams_refused(&mut client, &run).await;
    // The live stream keeps flowing during the drain, then ends.
    let mut after_signal = 0usize;
    let ended = loop {
        match stream.message().await {
            Ok(Some(_)) => after_signal += 1,
            Ok(None) => panic!("a million deltas cannot finish in the drain period"),
            Err(status) => break status,
        }
    };
    assert!(after_signal > 0, "chunks kept coming after SIGTERM");
    assert_unavailable(&ended, "SERVER_SHUTDOWN");
    let status = process.wait_for_exit(Duration::from_secs(15)).await;
    assert!(
        status.success(),
        "agentd exited with {status}\n{}",
        process.log_text()
    );
    assert!(
        before.elapsed() >= Duration::from_secs(1),
        "{:?}",
        before.elapsed()
    );
    let log = process.log_text();
    assert!(log.contains("drain period over"), "{log}");
    assert!(!log.contains(ACME_KEY), "the log never shows a key");
    drop(process);

    // The run is stored as RUNNING, as its last commit left it.
    let store = SqliteStore::open(data.path().join("agentd.sqlite3")).expect("store");
    let stored = store
        .load_run(run.parse().unwrap())
        .await
        .expect("the run is stored");
    assert_eq!(stored.status(), RunStatus::Running, "{stored:?}");
    drop(store);

    // A new process finds it and takes it over.
    let next = ServerProcess::start_with(data.path(), &[], &[("AGENTD_API_KEYS_FILE", keys)]);
    let mut client = keyed(
        tonic::transport::Endpoint::from_shared(format!("http://{}", next.addr))
            .unwrap()
            .connect()
            .await
            .expect("connect"),
        Some(ACME_KEY),
    );
    let found = client
        .get_run(pb::GetRunRequest { run_id: run })
        .await
        .expect("the run survives the restart")
        .into_inner();
    assert_ne!(status_of(&found), pb::RunStatus::Failed, "{found:?}");
}

/// An `/ag-ui` stream is the gate's like any other: a new one is refused
/// (503) while the server drains, and an open one lasts the drain period,
/// then ends with a `RUN_ERROR` (code `SERVER_SHUTDOWN`), and the server
/// stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_ends_ag_ui_streams_after_the_period() {
    use super::sse::{post, Events};
    use serde_json::json;

    let mut server = SecureServer::start_draining(Duration::from_millis(1500), |_, _| {}).await;
    let url = format!("http://{}/ag-ui", server.addr);
    let input = |thread: &str, text: &str| json!({"threadId": thread, "runId": "r", "messages": [{"id": "m", "role": "user", "content": text}]});
    let accept = [("accept", "text/event-stream")];
    let streaming = post(&url, None, &accept, &input("slow", "stream 100000 every 100 ms")).await;
    assert_eq!(streaming.status(), 200);
    let mut events = Events::of(streaming);
    let started = events.next().await.expect("an event");
    assert_eq!(started["type"], "RUN_STARTED", "{started}");

    let signalled = Instant::now();
    server.signal_shutdown();
    wait_for_health(server.channel().await, ServingStatus::NotServing).await;
    let refused = post(&url, None, &accept, &input("late", "plain hello")).await;
    assert_eq!(refused.status(), 503);
    let body: serde_json::Value = refused.json().await.expect("a JSON error");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");

    let ended = events
        .until(|event| event["type"] == "RUN_ERROR" || event["type"] == "RUN_FINISHED")
        .await;
    assert_eq!(ended["type"], "RUN_ERROR", "{ended}");
    assert_eq!(ended["code"], "SERVER_SHUTDOWN", "{ended}");
    assert!(
        signalled.elapsed() >= Duration::from_millis(1400),
        "{:?}",
        signalled.elapsed()
    );
    assert!(events.next().await.is_none(), "nothing after the RUN_ERROR");
    tokio::time::timeout(Duration::from_secs(10), server.stopped())
        .await
        .expect("the server stops after the drain");
}
