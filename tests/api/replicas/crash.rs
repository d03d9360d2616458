//! Crash recovery with real processes and `kill -9` mid-stream: with
//! PostgreSQL the other replica takes the run over once the dead one's lease
//! expires; with SQLite the restarted server takes it over at startup. In
//! both, the run finishes, every client that follows it sees one contiguous
//! chunk sequence, and what any client saw before the crash is exactly what
//! the store keeps (nothing seen is ever renumbered).

use std::time::Duration;

use agentd::pb::{self, AgentChunk};
use tokio_stream::StreamExt;

use super::process::{assert_contiguous, get_run, is_resumed_start, start_run, subscribe, Pair, Replica};
use crate::helpers::{collect, finish_reason, kinds, status_of, text};

/// Each attempt of the step streams for about 3 s: long enough that a slow,
/// loaded test machine still kills the process while the run is executing,
/// not after it has already finished.
const DELTAS: usize = 200;
const PROMPT: &str = "stream 200 every 15 ms";
/// Chunks a client reads before the executing process is killed.
const BEFORE_CRASH: usize = 30;
/// Long enough for a takeover and a whole new attempt of the step.
const FINISH_TIMEOUT: Duration = Duration::from_secs(20);

/// Reads `count` chunks of `stream`.
async fn read(stream: &mut tonic::Streaming<AgentChunk>, count: usize) -> Vec<AgentChunk> {
    let mut chunks = Vec::new();
    while chunks.len() < count {
        match stream.next().await {
            Some(Ok(chunk)) => chunks.push(chunk),
            other => panic!("the stream ended early: {other:?}"),
        }
    }
    chunks
}

/// Reads what a killed process had sent on `stream` before it died, and
/// checks that the run was still executing then.
async fn drain_killed(stream: &mut tonic::Streaming<AgentChunk>, seen: &mut Vec<AgentChunk>) {
    while let Some(Ok(chunk)) = stream.next().await {
        seen.push(chunk);
    }
    assert!(
        !kinds(seen).contains(&"finish"),
        "the run was still executing when its process was killed"
    );
}

/// Checks one client's view of the whole run against the store's: seqs
/// 1..=last without gap, identical chunks, one takeover `start`, and the
/// step's second attempt complete.
fn check_whole_run(seen: &[AgentChunk], stored: &[AgentChunk], crashed_after: u64) {
    assert_contiguous(seen, 1);
    assert_eq!(seen, stored, "the client saw exactly what the store keeps");
    assert_eq!(finish_reason(seen), pb::FinishReason::Stop);
    let takeovers: Vec<&AgentChunk> = seen.iter().filter(|c| is_resumed_start(c)).collect();
    assert_eq!(takeovers.len(), 1, "one takeover start");
    assert!(
        takeovers[0].seq > crashed_after,
        "the takeover continues after every chunk seen before the crash"
    );
    // The interrupted step ran again in full after the takeover.
    let after: Vec<AgentChunk> = seen
        .iter()
        .filter(|c| c.seq > takeovers[0].seq)
        .cloned()
        .collect();
    let expected: String = (0..DELTAS).map(|i| format!("token{i} ")).collect();
    assert_eq!(text(&after), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn kill_9_of_the_executing_replica_mid_stream_and_the_other_finishes_the_run() {
    let mut pair = Pair::start().await;
    let (mut a, mut b) = (pair.a.client().await, pair.b.client().await);

    // The run executes on A; its client reads from A, a subscriber from B.
    let mut origin = start_run(&mut a, PROMPT).await;
    let mut seen_on_a = read(&mut origin, 1).await;
    let id = seen_on_a[0].run_id.clone();
    let mut follower = subscribe(&mut b, &id, 0).await;
    let mut seen_on_b = read(&mut follower, BEFORE_CRASH).await;
    seen_on_a.extend(read(&mut origin, BEFORE_CRASH).await);

    pair.a.kill_hard();
    // A's client lost its stream: it resubscribes on B after what it saw.
    drain_killed(&mut origin, &mut seen_on_a).await;
    let crashed_after = seen_on_a.last().unwrap().seq.max(seen_on_b.last().unwrap().seq);

    let rest_b = tokio::time::timeout(FINISH_TIMEOUT, collect(follower))
        .await
        .expect("the subscriber on B saw the run finish")
        .expect("B's stream");
    seen_on_b.extend(rest_b);
    let resubscribed = subscribe(&mut b, &id, seen_on_a.last().unwrap().seq).await;
    let rest_a = tokio::time::timeout(FINISH_TIMEOUT, collect(resubscribed))
        .await
        .expect("A's client saw the run finish on B")
        .expect("resubscribed stream");
    seen_on_a.extend(rest_a);

    let run = get_run(&mut b, &id).await;
    assert_eq!(status_of(&run), pb::RunStatus::Completed);
    let stored = collect(subscribe(&mut b, &id, 0).await).await.expect("replay");
    assert_eq!(stored.last().unwrap().seq, run.last_seq);
    check_whole_run(&seen_on_b, &stored, crashed_after);
    check_whole_run(&seen_on_a, &stored, crashed_after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_mid_stream_and_the_restarted_sqlite_server_finishes_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("agentd.sqlite3").display());
    let mut first = Replica::on_store(&store, dir.path(), "first");
    let mut client = first.client().await;
    let mut origin = start_run(&mut client, PROMPT).await;
    let mut seen = read(&mut origin, BEFORE_CRASH).await;
    let id = seen[0].run_id.clone();

    first.kill_hard();
    drain_killed(&mut origin, &mut seen).await;
    let crashed_after = seen.last().unwrap().seq;

    // The restarted server takes the run over at startup; the client
    // resubscribes after the last chunk it saw.
    let second = Replica::on_store(&store, dir.path(), "second");
    let mut client = second.client().await;
    let rest = subscribe(&mut client, &id, crashed_after).await;
    let rest = tokio::time::timeout(FINISH_TIMEOUT, collect(rest))
        .await
        .expect("the run finished after the restart")
        .expect("resubscribed stream");
    seen.extend(rest);

    let run = get_run(&mut client, &id).await;
    assert_eq!(status_of(&run), pb::RunStatus::Completed);
    let stored = collect(subscribe(&mut client, &id, 0).await)
        .await
        .expect("replay");
    check_whole_run(&seen, &stored, crashed_after);
    assert!(
        second.log_text().contains("took over"),
        "the restarted server logs the takeover:\n{}",
        second.log_text()
    );
}
