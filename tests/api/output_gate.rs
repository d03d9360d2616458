//! The output gate: no chunk leaves before the state it shows is stored,
//! and nothing more is written than that. A run is first written at its
//! first durable point: its suspension or finish, a tool with side effects
//! about to run, or the deadline `[server] first_write_deadline` for a slow
//! step. (Two writes per ask_user cycle: `metrics.rs` counts them.)

use std::sync::Arc;
use std::time::Duration;

use agentd::pb::{self, FinishReason, RunStatus};
use axum::routing::post;
use tokio::sync::{mpsc, Notify};
use tonic::Code;

use crate::helpers::{collect, finish_reason, kinds, settings_in, status_of, TestServer};
use crate::user_tools::{agent_with, settings_with};

/// Opens a StreamAgent of `prompt` and returns its stream.
async fn open(server: &TestServer, prompt: &str) -> tonic::Streaming<pb::AgentChunk> {
    let request = pb::StreamAgentRequest {
        prompt: prompt.into(),
        ..Default::default()
    };
    server
        .client()
        .stream_agent(request)
        .await
        .expect("StreamAgent")
        .into_inner()
}

/// The stream's next chunk; a chunk held back for 10 s fails the test.
async fn next_chunk(stream: &mut tonic::Streaming<pb::AgentChunk>) -> pb::AgentChunk {
    tokio::time::timeout(Duration::from_secs(10), stream.message())
        .await
        .expect("a chunk within 10 s")
        .expect("a chunk")
        .expect("the stream goes on")
}

/// Reads `stream` up to and including the first chunk that `wanted`
/// picks, and returns every chunk read.
async fn read_until(
    stream: &mut tonic::Streaming<pb::AgentChunk>,
    wanted: impl Fn(&pb::agent_chunk::Chunk) -> bool,
) -> Vec<pb::AgentChunk> {
    let mut read = Vec::new();
    loop {
        let chunk = next_chunk(stream).await;
        let found = chunk.chunk.as_ref().is_some_and(&wanted);
        read.push(chunk);
        if found {
            return read;
        }
    }
}

#[tokio::test]
async fn a_slow_step_has_its_run_written_at_the_deadline_and_streams_on() {
    let server = TestServer::start().await;
    // Five deltas 300 ms apart: the step takes 1.5 s, far past the
    // deadline (5 ms by default).
    let mut stream = open(&server, "stream 5 every 300ms").await;
    let start = next_chunk(&mut stream).await;
    assert!(
        matches!(start.chunk, Some(pb::agent_chunk::Chunk::Start(_))),
        "the stream opens with start: {start:?}"
    );
    let run_id = start.run_id.clone();
    // The start was released, so the run is stored, mid-step.
    let run = server.get_run(&run_id).await;
    assert_eq!(status_of(&run), RunStatus::Running, "{run:?}");
    let to_first_delta = read_until(&mut stream, |chunk| {
        matches!(chunk, pb::agent_chunk::Chunk::TextDelta(_))
    })
    .await;
    let rest = collect(stream).await.expect("the rest of the stream");
    assert_eq!(finish_reason(&rest), FinishReason::Stop);
    assert_eq!(status_of(&server.get_run(&run_id).await), RunStatus::Completed);
    // Every chunk the client saw is in the store, in order.
    let replayed = collect(
        server
            .client()
            .subscribe_run(pb::SubscribeRunRequest {
                run_id: run_id.clone(),
                after_seq: 0,
            })
            .await
            .expect("SubscribeRun")
            .into_inner(),
    )
    .await
    .expect("replay");
    let mut seen = vec![start];
    seen.extend(to_first_delta);
    seen.extend(rest);
    assert_eq!(kinds(&replayed), kinds(&seen));
    assert_eq!(replayed, seen);
}

/// An HTTP server whose one route tells `arrived` of each request and
/// answers only once `release` is notified.
async fn held_http_tool(arrived: mpsc::UnboundedSender<()>, release: Arc<Notify>) -> String {
    let app = axum::Router::new().route(
        "/held",
        post(move || {
            let (arrived, release) = (arrived.clone(), Arc::clone(&release));
            async move {
                let released = release.notified();
                let _ = arrived.send(());
                released.await;
                "done"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("http server") });
    format!("http://{addr}/held")
}

#[tokio::test]
async fn a_tool_with_side_effects_runs_only_once_its_run_is_stored() {
    let (arrived_tx, mut arrived) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let url = held_http_tool(arrived_tx, Arc::clone(&release)).await;
    let temp = tempfile::tempdir().expect("temp dir");
    let config = format!("[[tools]]\nkind = \"http\"\nname = \"book\"\nurl = \"{url}\"\n");
    let mut settings = settings_with(temp.path(), vec![agent_with("booker", &["book"])], &config);
    // No deadline in sight: only the call about to run writes the run.
    settings.server.first_write_deadline = Duration::from_secs(3600);
    let server = TestServer::start_with(settings).await;

    let request = pb::StreamAgentRequest {
        agent_id: "booker".into(),
        prompt: r#"call book {"room": "12"}"#.into(),
        ..Default::default()
    };
    let mut stream = server
        .client()
        .stream_agent(request)
        .await
        .expect("StreamAgent")
        .into_inner();
    arrived.recv().await.expect("the tool was called");
    // The call is in flight and has not answered: what came before it
    // was written, and released.
    let start = next_chunk(&mut stream).await;
    assert!(
        matches!(start.chunk, Some(pb::agent_chunk::Chunk::Start(_))),
        "the stream opens with start: {start:?}"
    );
    read_until(&mut stream, |chunk| {
        matches!(chunk, pb::agent_chunk::Chunk::ToolCall(_))
    })
    .await;
    let run = server.get_run(&start.run_id).await;
    assert_eq!(status_of(&run), RunStatus::Running, "{run:?}");

    release.notify_one();
    let rest = collect(stream).await.expect("the rest of the stream");
    assert_eq!(finish_reason(&rest), FinishReason::Stop);
}

#[tokio::test]
async fn a_run_that_suspends_before_its_deadline_is_stored_suspended_and_answered_once() {
    // With the deadline far away, the suspension is the start's only
    // durable point (that it is one write is counted in `metrics.rs`): the
    // run is stored suspended, a client that read it answers it at once,
    // and a second answer is refused with the run as it was.
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    settings.server.first_write_deadline = Duration::from_secs(3600);
    let server = TestServer::start_with(settings).await;
    let chunks = server.stream("Help me pick a plan").await;
    assert_eq!(finish_reason(&chunks), FinishReason::Suspended);
    let run_id = crate::helpers::run_id(&chunks);
    assert_eq!(status_of(&server.get_run(&run_id).await), RunStatus::Suspended);
    let resumed = server.resume_text(&run_id, "Pro").await.expect("Resume");
    assert_eq!(finish_reason(&resumed), FinishReason::Stop);
    // Answered once: a second answer is refused, the run as it was.
    let again = server.resume_text(&run_id, "Basic").await;
    assert_eq!(
        again.expect_err("answered already").code(),
        Code::FailedPrecondition
    );
    assert_eq!(status_of(&server.get_run(&run_id).await), RunStatus::Completed);
}
