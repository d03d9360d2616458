//! A run outlives its streams: replay and live subscription, disconnects,
//! cancellation, and idempotent retries of StreamAgent and Resume.

use std::sync::Arc;
use std::time::Duration;

use agentd::agent::{AgentRegistry, AgentSpec};

use agentd::pb::agent_chunk::Chunk;
use agentd::pb::resume_request::Answer;
use agentd::pb::{self, AgentChunk, FinishReason, RunStatus};
use agentd::runtime::{Runtime, RuntimeConfig};
use tonic::{Code, Streaming};

use crate::helpers::*;

async fn subscribe(
    server: &TestServer,
    run_id: &str,
    after_seq: u64,
) -> Result<Streaming<AgentChunk>, tonic::Status> {
    let request = pb::SubscribeRunRequest {
        run_id: run_id.into(),
        after_seq,
    };
    Ok(server.client().subscribe_run(request).await?.into_inner())
}

async fn replay(server: &TestServer, run_id: &str, after_seq: u64) -> Vec<AgentChunk> {
    collect(subscribe(server, run_id, after_seq).await.unwrap())
        .await
        .unwrap()
}

/// Starts a run and reads its first `n` chunks, keeping the stream open.
async fn start_and_read(
    server: &TestServer,
    request: pb::StreamAgentRequest,
    n: usize,
) -> (Streaming<AgentChunk>, Vec<AgentChunk>) {
    let mut stream = server.client().stream_agent(request).await.unwrap().into_inner();
    let mut chunks = Vec::new();
    while chunks.len() < n {
        chunks.push(stream.message().await.unwrap().expect("more chunks"));
    }
    (stream, chunks)
}

fn prompt(prompt: &str) -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        prompt: prompt.into(),
        ..Default::default()
    }
}

fn seqs(chunks: &[AgentChunk]) -> Vec<u64> {
    chunks.iter().map(|c| c.seq).collect()
}

/// Polls GetRun until the run has `status` (bounded: 10 s).
async fn wait_for_status(server: &TestServer, run_id: &str, status: RunStatus) -> pb::Run {
    for _ in 0..400 {
        let run = server.get_run(run_id).await;
        if status_of(&run) == status {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "run {run_id} never became {status:?}: {:?}",
        server.get_run(run_id).await
    );
}

#[tokio::test]
async fn subscribe_replays_a_suspended_and_a_finished_run_exactly() {
    let server = TestServer::start().await;
    let first = server.stream("pick a plan").await;
    let id = run_id(&first);
    assert_eq!(
        replay(&server, &id, 0).await,
        first,
        "replay of a suspended run is its stream"
    );

    let second = server.resume_text(&id, "Pro").await.unwrap();
    let whole: Vec<AgentChunk> = first.iter().chain(&second).cloned().collect();
    assert_eq!(
        replay(&server, &id, 0).await,
        whole,
        "replay covers every stream of the run"
    );
    let tail = replay(&server, &id, 3).await;
    assert_eq!(tail, whole[3..].to_vec());
    assert!(replay(&server, &id, whole.len() as u64).await.is_empty());

    let beyond = subscribe(&server, &id, whole.len() as u64 + 1).await;
    let status = expect_code(beyond, Code::InvalidArgument);
    assert!(status.message().contains("after_seq"), "{}", status.message());
    expect_code(
        subscribe(&server, &uuid::Uuid::now_v7().to_string(), 0).await,
        Code::NotFound,
    );
}

#[tokio::test]
async fn subscribers_joining_mid_step_see_every_chunk_once() {
    let server = TestServer::start().await;
    // The starter reads a little, then stops reading: the run blocks on it
    // mid-step, so subscribers surely join a live step.
    let (mut starter, mut seen) = start_and_read(&server, prompt("stream 20000"), 50).await;
    let id = run_id(&seen);
    let subscribers: Vec<_> = [0u64, 10, 40]
        .into_iter()
        .map(|after| {
            let server_client = server.client();
            let id = id.clone();
            tokio::spawn(async move {
                let mut client = server_client;
                let request = pb::SubscribeRunRequest {
                    run_id: id,
                    after_seq: after,
                };
                let stream = client.subscribe_run(request).await.unwrap().into_inner();
                (after, collect(stream).await.unwrap())
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    while let Some(chunk) = starter.message().await.unwrap() {
        seen.push(chunk);
    }
    assert_eq!(finish_reason(&seen), FinishReason::Stop);
    assert_eq!(seqs(&seen), (1..=seen.len() as u64).collect::<Vec<_>>());
    for subscriber in subscribers {
        let (after, chunks) = subscriber.await.unwrap();
        assert_eq!(
            chunks,
            seen[after as usize..].to_vec(),
            "subscriber after {after}"
        );
    }
}

#[tokio::test]
async fn a_client_that_stops_reading_still_gets_every_chunk_once_in_order() {
    // A stream buffers two writes' chunks: the run stores far more while
    // its client reads nothing, and the client gets the rest from the store.
    let temp = tempfile::tempdir().expect("temp dir");
    let store = agentd::store::SqliteStore::open(temp.path().join("agentd.sqlite3")).expect("store");
    let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
    let config = RuntimeConfig {
        stream_buffer: 2,
        ..RuntimeConfig::default()
    };
    let server = TestServer::serve(Runtime::new(agents, Arc::new(store), config)).await;
    let (mut starter, mut seen) = start_and_read(&server, prompt("stream 100000"), 10).await;
    let id = run_id(&seen);
    wait_for_status(&server, &id, RunStatus::Completed).await;
    while let Some(chunk) = starter.message().await.unwrap() {
        seen.push(chunk);
    }
    assert_eq!(finish_reason(&seen), FinishReason::Stop);
    assert_eq!(seqs(&seen), (1..=seen.len() as u64).collect::<Vec<_>>());
    assert_eq!(text(&seen).split_whitespace().count(), 100_000);
    assert_eq!(seen, replay(&server, &id, 0).await);
}

#[tokio::test]
async fn a_suspension_is_answered_at_once_by_a_client_that_just_read_it() {
    let server = TestServer::start().await;
    for _ in 0..30 {
        // Read up to the suspension's finish, and answer without waiting
        // for anything else (the end of the stream included).
        let mut stream = server
            .client()
            .stream_agent(prompt("pick a plan"))
            .await
            .unwrap()
            .into_inner();
        let mut chunks = Vec::new();
        while !matches!(
            chunks.last(),
            Some(AgentChunk {
                chunk: Some(Chunk::Finish(_)),
                ..
            })
        ) {
            chunks.push(stream.message().await.unwrap().expect("a chunk up to the finish"));
        }
        assert_eq!(finish_reason(&chunks), FinishReason::Suspended);
        let continuation = server.resume_text(&run_id(&chunks), "Basic").await;
        let continuation = continuation.expect("the answer is taken");
        assert_eq!(finish_reason(&continuation), FinishReason::Stop);
        assert_eq!(stream.message().await.unwrap(), None);
    }
}

#[tokio::test]
async fn a_subscriber_waiting_on_a_suspended_run_follows_its_resume() {
    let server = TestServer::start().await;
    let first = server.stream("pick a plan").await;
    let id = run_id(&first);
    let last = first.last().unwrap().seq;
    let waiting = tokio::spawn({
        let mut client = server.client();
        let id = id.clone();
        async move {
            let request = pb::SubscribeRunRequest {
                run_id: id,
                after_seq: last,
            };
            collect(client.subscribe_run(request).await.unwrap().into_inner())
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiting.is_finished(), "the subscriber waits for the answer");
    let continuation = server.resume_text(&id, "Basic").await.unwrap();
    let followed = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(followed, continuation);
}

#[tokio::test]
async fn a_dropped_stream_does_not_stop_the_run() {
    let server = TestServer::start().await;
    let (stream, seen) = start_and_read(&server, prompt("stream 5000"), 20).await;
    drop(stream);
    let id = run_id(&seen);
    let run = wait_for_status(&server, &id, RunStatus::Completed).await;
    let whole = replay(&server, &id, 0).await;
    assert_eq!(whole.len() as u64, run.last_seq);
    assert_eq!(whole[..20], seen[..]);
    assert_eq!(finish_reason(&whole), FinishReason::Stop);
    assert_eq!(text(&whole).split_whitespace().count(), 5000);
}

#[tokio::test]
async fn a_dropped_stream_cancels_a_run_that_asks_for_it() {
    let server = TestServer::start().await;
    let request = pb::StreamAgentRequest {
        prompt: "stream 200000".into(),
        options: Some(pb::RunOptions {
            on_disconnect: pb::DisconnectPolicy::Cancel as i32,
            ..Default::default()
        }),
        ..Default::default()
    };
    let (stream, seen) = start_and_read(&server, request, 20).await;
    drop(stream);
    let id = run_id(&seen);
    let run = wait_for_status(&server, &id, RunStatus::Cancelled).await;
    assert!(run.cancel_reason.contains("disconnect"), "{}", run.cancel_reason);
    assert_eq!(
        finish_reason(&replay(&server, &id, 0).await),
        FinishReason::Cancelled
    );
}

#[tokio::test]
async fn cancel_stops_a_running_run_promptly() {
    let server = TestServer::start().await;
    let (mut stream, mut seen) = start_and_read(&server, prompt("stream 1000000"), 10).await;
    let id = run_id(&seen);
    let request = pb::CancelRunRequest {
        run_id: id.clone(),
        reason: "changed my mind".into(),
    };
    let mut client = server.client();
    let cancel = tokio::time::timeout(Duration::from_secs(5), client.cancel_run(request));
    let run = cancel.await.expect("CancelRun is prompt").unwrap().into_inner();
    assert_eq!(status_of(&run), RunStatus::Cancelled);
    assert_eq!(run.cancel_reason, "changed my mind");
    while let Some(chunk) = stream.message().await.unwrap() {
        seen.push(chunk);
    }
    assert_eq!(finish_reason(&seen), FinishReason::Cancelled);
    assert!(seen.len() < 1_000_000, "the stream stopped early");
    assert_eq!(seqs(&seen), (1..=seen.len() as u64).collect::<Vec<_>>());
    assert_eq!(server.get_run(&id).await.last_seq, seen.last().unwrap().seq);

    let again = server
        .client()
        .cancel_run(pb::CancelRunRequest {
            run_id: id,
            reason: String::new(),
        })
        .await;
    let status = expect_code(again, Code::FailedPrecondition);
    assert!(status.message().contains("cancelled"), "{}", status.message());
}

#[tokio::test]
async fn cancelling_a_suspended_run_declines_its_pending_calls() {
    let server = TestServer::start().await;
    let first = server.stream("ask me two questions").await;
    let id = run_id(&first);
    let waiting = tokio::spawn({
        let mut client = server.client();
        let request = pb::SubscribeRunRequest {
            run_id: id.clone(),
            after_seq: first.last().unwrap().seq,
        };
        async move {
            collect(client.subscribe_run(request).await.unwrap().into_inner())
                .await
                .unwrap()
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let request = pb::CancelRunRequest {
        run_id: id.clone(),
        reason: "order withdrawn".into(),
    };
    let run = server.client().cancel_run(request).await.unwrap().into_inner();
    assert_eq!(status_of(&run), RunStatus::Cancelled);
    assert!(run.pending.is_empty());

    let closing = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kinds(&closing), ["start", "tool_result", "tool_result", "finish"]);
    assert_eq!(finish_reason(&closing), FinishReason::Cancelled);
    for result in tool_results(&closing) {
        assert!(result.is_error);
        assert_eq!(
            result.content,
            "The run was cancelled before this call was answered: order withdrawn"
        );
    }
    let status = expect_code(server.resume_text(&id, "Ada").await, Code::FailedPrecondition);
    assert!(status.message().contains("cancelled"));
}

#[tokio::test]
async fn a_retried_start_returns_the_same_run() {
    let server = TestServer::start().await;
    let request = pb::StreamAgentRequest {
        request_id: "order-42".into(),
        ..prompt("pick a plan")
    };
    let first = server.start_run(request.clone()).await.unwrap();
    let retry = server.start_run(request.clone()).await.unwrap();
    assert_eq!(retry, first, "a retry replays the same run");

    // Retries racing each other still make one run.
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let mut client = server.client();
            let request = pb::StreamAgentRequest {
                request_id: "order-43".into(),
                ..prompt("pick a plan")
            };
            tokio::spawn(async move {
                collect(client.stream_agent(request).await.unwrap().into_inner())
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut ids = Vec::new();
    for racer in racers {
        let chunks = racer.await.unwrap();
        assert_eq!(finish_reason(&chunks), FinishReason::Suspended);
        ids.push(run_id(&chunks));
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "one run for one request_id");
}

#[tokio::test]
async fn a_retried_resume_replays_and_never_answers_twice() {
    let server = TestServer::start().await;
    let id = run_id(&server.stream("pick a plan").await);
    let resume = |answer: &str| pb::ResumeRequest {
        run_id: id.clone(),
        tool_call_id: String::new(),
        answer: Some(Answer::Text(answer.into())),
        request_id: "answer-1".into(),
        answers: Vec::new(),
    };
    let first = server.resume(resume("Pro")).await.unwrap();
    assert_eq!(finish_reason(&first), FinishReason::Stop);
    let retry = server.resume(resume("Pro")).await.unwrap();
    assert_eq!(retry, first, "the same continuation, replayed");

    let other = expect_code(server.resume(resume("Basic")).await, Code::FailedPrecondition);
    assert!(other.message().contains("answer-1"), "{}", other.message());
    let run = server.get_run(&id).await;
    assert_eq!(run.steps, 2, "the model ran once after the answer");
    assert_eq!(run.final_text, "Thanks! You answered: Pro.");
    let answers = tool_results(&replay(&server, &id, 0).await);
    assert_eq!(answers.len(), 1);
    let Some(Chunk::Start(start)) = &first[0].chunk else {
        panic!("no start")
    };
    assert!(start.resumed);
}
