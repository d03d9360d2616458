//! Any replica serves any run (PostgreSQL, two real server processes):
//! suspend on one and resume on the other, watchers on either side see the
//! continuation, racing Resumes on both let exactly one through, a
//! subscriber follows a run executing on the other replica chunk by chunk
//! (the added latency is printed), CancelRun on one stops a run on the
//! other, and GetRun and ListRuns agree everywhere.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agentd::pb::{self, AgentChunk};
use tokio_stream::StreamExt;
use tonic::Code;

use super::process::{
    assert_contiguous, get_run, is_resumed_start, start_run, stream_prompt, subscribe, Pair,
};
use crate::helpers::{collect, finish, finish_reason, kinds, resume_request, run_id, status_of, suspensions};

fn answer(text: &str) -> pb::resume_request::Answer {
    pb::resume_request::Answer::Text(text.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn suspend_on_one_replica_resume_on_the_other() {
    let pair = Pair::start().await;
    let (mut a, mut b) = (pair.a.client().await, pair.b.client().await);

    // Suspended through A; B knows it.
    let opening = stream_prompt(&mut a, "Help me pick a plan").await;
    assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
    let id = run_id(&opening);
    let call = suspensions(&opening)[0].tool_call_id.clone();
    let on_b = get_run(&mut b, &id).await;
    assert_eq!(status_of(&on_b), pb::RunStatus::Suspended);
    assert_eq!(on_b, get_run(&mut a, &id).await, "GetRun agrees on both replicas");

    // Watchers on both replicas wait on the suspended run.
    let watch_a = subscribe(&mut a, &id, opening.last().unwrap().seq).await;
    let watch_b = subscribe(&mut b, &id, opening.last().unwrap().seq).await;

    // Resumed through B.
    let resumed = b
        .resume(resume_request(&id, &call, answer("Pro")))
        .await
        .expect("Resume on B")
        .into_inner();
    let resumed = collect(resumed).await.expect("Resume stream");
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);
    assert!(is_resumed_start(&resumed[0]));
    assert_contiguous(&resumed, opening.last().unwrap().seq + 1);

    for (name, watch) in [("A", watch_a), ("B", watch_b)] {
        let seen = tokio::time::timeout(Duration::from_secs(10), collect(watch))
            .await
            .unwrap_or_else(|_| panic!("the watcher on {name} saw the continuation"))
            .expect("watch stream");
        assert_eq!(
            seen, resumed,
            "the watcher on {name} saw exactly the continuation"
        );
    }

    // A second run: suspended through B, resumed through A, with the
    // watcher on B (the other side).
    let opening = stream_prompt(&mut b, "Help me pick a plan").await;
    let id2 = run_id(&opening);
    let watch_b = subscribe(&mut b, &id2, opening.last().unwrap().seq).await;
    let resumed = a
        .resume(resume_request(&id2, "", answer("Basic")))
        .await
        .expect("Resume on A")
        .into_inner();
    let resumed = collect(resumed).await.expect("Resume stream");
    assert!(finish(&resumed).text.contains("Basic"));
    let seen = tokio::time::timeout(Duration::from_secs(10), collect(watch_b))
        .await
        .expect("the watcher on B saw the resume on A")
        .expect("watch stream");
    assert_eq!(seen, resumed);

    // Both replicas list the same runs.
    let list = |status: pb::RunStatus| pb::ListRunsRequest {
        status: status as i32,
        ..Default::default()
    };
    let on_a = a
        .list_runs(list(pb::RunStatus::Completed))
        .await
        .unwrap()
        .into_inner();
    let on_b = b
        .list_runs(list(pb::RunStatus::Completed))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(on_a, on_b, "ListRuns agrees on both replicas");
    let ids: Vec<&str> = on_a.runs.iter().map(|run| run.run_id.as_str()).collect();
    assert_eq!(ids, vec![id2.as_str(), id.as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn racing_resumes_on_both_replicas_let_exactly_one_through() {
    const RESUMES: usize = 32;
    let pair = Pair::start().await;
    let (mut a, b) = (pair.a.client().await, pair.b.client().await);
    let opening = stream_prompt(&mut a, "Help me pick a plan").await;
    let id = run_id(&opening);

    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(RESUMES));
    let tasks: Vec<_> = (0..RESUMES)
        .map(|i| {
            let mut client = if i % 2 == 0 { a.clone() } else { b.clone() };
            let barrier = std::sync::Arc::clone(&barrier);
            let request = resume_request(&id, "", answer(["Basic", "Pro", "Enterprise"][i % 3]));
            tokio::spawn(async move {
                barrier.wait().await;
                match client.resume(request).await {
                    Ok(stream) => Ok(collect(stream.into_inner()).await.expect("stream")),
                    Err(status) => Err(status),
                }
            })
        })
        .collect();
    let mut winners = Vec::new();
    for task in tasks {
        match task.await.expect("task") {
            Ok(chunks) => winners.push(chunks),
            Err(status) => assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one Resume proceeds");
    let winner = &winners[0];
    assert_eq!(finish_reason(winner), pb::FinishReason::Stop);
    let stored = get_run(&mut a, &id).await;
    assert_eq!(status_of(&stored), pb::RunStatus::Completed);
    assert_eq!(stored.last_seq, winner.last().unwrap().seq);
}

/// Reads `stream` to its end, noting when each seq arrived.
async fn timed(mut stream: tonic::Streaming<AgentChunk>) -> (Vec<AgentChunk>, HashMap<u64, Instant>) {
    let mut chunks = Vec::new();
    let mut arrived = HashMap::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("chunk");
        arrived.insert(chunk.seq, Instant::now());
        chunks.push(chunk);
    }
    (chunks, arrived)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_subscriber_on_one_replica_sees_every_chunk_of_a_run_on_the_other() {
    const DELTAS: usize = 200;
    let pair = Pair::start().await;
    let (mut a, mut b) = (pair.a.client().await, pair.b.client().await);

    let mut origin = start_run(&mut a, &format!("stream {DELTAS} every 2 ms")).await;
    let first = origin.next().await.expect("a first chunk").expect("chunk");
    let id = first.run_id.clone();
    let follower = subscribe(&mut b, &id, 0).await;
    let (origin, follower) = tokio::join!(timed(origin), timed(follower));
    let (mut on_a, arrived_a) = origin;
    let (on_b, arrived_b) = follower;
    on_a.insert(0, first);

    assert_eq!(finish_reason(&on_a), pb::FinishReason::Stop);
    assert_contiguous(&on_b, 1);
    assert_eq!(on_b, on_a, "the subscriber on B saw every chunk of the run on A");
    assert_eq!(
        kinds(&on_b).iter().filter(|k| **k == "text_delta").count(),
        DELTAS
    );

    // How much later each chunk reached B's subscriber than A's own client.
    let mut added: Vec<f64> = arrived_a
        .iter()
        .filter_map(|(seq, at_a)| {
            let at_b = arrived_b.get(seq)?;
            Some(at_b.saturating_duration_since(*at_a).as_secs_f64() * 1000.0)
        })
        .collect();
    added.sort_by(|x, y| x.total_cmp(y));
    let percentile = |p: f64| added[((added.len() - 1) as f64 * p) as usize];
    eprintln!(
        "cross-replica latency added to a chunk (B's subscriber vs A's client), {} chunks: \
         p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        added.len(),
        percentile(0.5),
        percentile(0.9),
        percentile(0.99),
        percentile(1.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn cancel_on_one_replica_stops_a_run_on_the_other() {
    let pair = Pair::start().await;
    let (mut a, mut b) = (pair.a.client().await, pair.b.client().await);
    let mut origin = start_run(&mut a, "stream 100000 every 1 ms").await;
    let first = origin.next().await.expect("a first chunk").expect("chunk");
    let id = first.run_id.clone();

    let started = Instant::now();
    let cancelled = b
        .cancel_run(pb::CancelRunRequest {
            run_id: id.clone(),
            reason: "stop it from B".into(),
        })
        .await
        .expect("CancelRun on B")
        .into_inner();
    assert_eq!(status_of(&cancelled), pb::RunStatus::Cancelled);
    assert_eq!(cancelled.cancel_reason, "stop it from B");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cancelled long before the 100 s stream would end"
    );

    // A's client sees the cancellation as its stream's end.
    let mut rest = collect(origin).await.expect("stream on A");
    rest.insert(0, first);
    assert_eq!(finish_reason(&rest), pb::FinishReason::Cancelled);
    assert_contiguous(&rest, 1);
    assert_eq!(get_run(&mut a, &id).await.last_seq, rest.last().unwrap().seq);
}
