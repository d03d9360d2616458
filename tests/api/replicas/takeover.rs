//! Takeover in seconds (PostgreSQL, default lease settings: a 10 s lease,
//! the search for orphans every second): a replica killed with `kill -9`
//! while it executes a run loses the run to the other replica before its
//! lease could expire, because the store sees its session end; and a live
//! replica's runs are never taken over. The measurement of both (time from
//! the kill to the next chunk on the other replica, takeovers with 64 runs
//! in flight) is an ignored test that prints its figures.

use std::time::{Duration, Instant};

use agentd::pb::{self, AgentChunk};
use prost_types::Timestamp as WireTime;
use tokio_stream::StreamExt;

use super::process::{assert_contiguous, get_run, is_resumed_start, start_run, subscribe, Pair, Replica};
use crate::helpers::{collect, finish_reason, status_of};
use crate::pg::TestSchema;
use crate::startup::{says, start_failing};
use crate::webhooks::{metric, scrape};

/// The default lease TTL, which these replicas run with.
const LEASE_TTL: Duration = Duration::from_secs(10);
/// A step that streams for about 3 s: the kill lands while it executes.
const PROMPT: &str = "stream 200 every 15 ms";
/// Chunks the subscriber reads before the executing replica is killed.
const BEFORE_CRASH: usize = 30;
const FINISH_TIMEOUT: Duration = Duration::from_secs(30);

/// Reads `stream` until the chunk that satisfies `wanted`, returning every
/// chunk read.
async fn read_until(
    stream: &mut tonic::Streaming<AgentChunk>,
    wanted: impl Fn(&AgentChunk) -> bool,
) -> Vec<AgentChunk> {
    let mut chunks = Vec::new();
    loop {
        match stream.next().await {
            Some(Ok(chunk)) => {
                let done = wanted(&chunk);
                chunks.push(chunk);
                if done {
                    return chunks;
                }
            }
            other => panic!("the stream ended early: {other:?}"),
        }
    }
}

/// Microseconds since the epoch of a chunk's time.
fn micros(time: &Option<WireTime>) -> i64 {
    let time = time.as_ref().expect("every chunk has a time");
    time.seconds * 1_000_000 + i64::from(time.nanos) / 1_000
}

/// The run's takeover `start` in `seen` came before the lease could have
/// expired. The executing process stored every chunk before anybody saw
/// it and renewed its lease with that write, so the lease held until at
/// least [`LEASE_TTL`] after the last chunk before the takeover: a `start`
/// before then means that something other than the lease decided.
fn assert_taken_over_before_the_lease_expired(seen: &[AgentChunk]) {
    let takeover = seen.iter().position(is_resumed_start).expect("a takeover start");
    let (last_before, start) = (&seen[takeover - 1], &seen[takeover]);
    let before_expiry = micros(&last_before.time) + LEASE_TTL.as_micros() as i64 - micros(&start.time);
    assert!(
        before_expiry > 0,
        "the takeover came {:?} after the lease could have expired",
        Duration::from_micros(before_expiry.unsigned_abs())
    );
}

/// A run that executes on `executor` and is followed from `follower`; once
/// the follower has seen [`BEFORE_CRASH`] chunks, `executor` is killed.
/// Returns the run id, what the follower saw up to and including the
/// takeover's `start`, and how long after the kill that `start` arrived.
async fn kill_mid_step(executor: &mut Replica, follower: &Replica) -> (String, Vec<AgentChunk>, Duration) {
    let mut on_executor = executor.client().await;
    let mut on_follower = follower.client().await;
    let mut origin = start_run(&mut on_executor, PROMPT).await;
    let first = origin.next().await.expect("a first chunk").expect("the stream");
    let id = first.run_id.clone();
    let mut followed = subscribe(&mut on_follower, &id, 0).await;
    let mut seen = Vec::new();
    while seen.len() < BEFORE_CRASH {
        seen.push(followed.next().await.expect("a chunk").expect("the stream"));
    }
    let killed_at = Instant::now();
    executor.kill_hard();
    seen.extend(read_until(&mut followed, is_resumed_start).await);
    let took = killed_at.elapsed();
    drop(origin);
    // The rest of the run, to its finish.
    let rest = tokio::time::timeout(FINISH_TIMEOUT, collect(followed))
        .await
        .expect("the run finished on the other replica")
        .expect("the follower's stream");
    seen.extend(rest);
    (id, seen, took)
}

/// Two live processes under one replica id would each take the other's
/// runs for their own: the second is refused before it announces itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_second_live_process_with_the_same_replica_id_is_refused() {
    let schema = TestSchema::create().await;
    let dirs = tempfile::tempdir().expect("temp dir");
    let url = schema.url();
    let _first = Replica::on_store_with_default_leases(&url, &dirs.path().join("a"), "replica-a");
    let data_dir = dirs.path().join("b");
    let data_dir = data_dir.to_str().expect("a UTF-8 path");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        &url,
        "--replica-id",
        "replica-a",
        "--data-dir",
        data_dir,
    ];
    let stderr = start_failing(&[], &args, &[]).await;
    says(
        &stderr,
        "store in use: the replica id \"replica-a\" is registered by another live process: \
         give every replica its own --replica-id",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn kill_9_hands_the_run_over_before_its_lease_could_expire() {
    let mut pair = Pair::start_with_default_leases().await;
    let (id, seen, _) = kill_mid_step(&mut pair.a, &pair.b).await;

    assert_contiguous(&seen, 1);
    assert_eq!(finish_reason(&seen), pb::FinishReason::Stop);
    // The end of A's session decided, not the lease.
    assert_taken_over_before_the_lease_expired(&seen);

    let log = pair
        .b
        .wait_for_log(|log| log.contains("took over a run whose replica is gone"))
        .await;
    assert!(log.contains("previous_owner=replica-a"), "{log}");
    let metrics = scrape(&pair.b).await;
    assert_eq!(
        metric(&metrics, "agentd_run_takeovers_total{holder=\"gone\"}"),
        Some(1.0),
        "{metrics}"
    );
    let mut b = pair.b.client().await;
    assert_eq!(status_of(&get_run(&mut b, &id).await), pb::RunStatus::Completed);
}

/// A replica restarted under its replica id (a StatefulSet's pod, a
/// systemd unit) takes back the runs its earlier process left running at
/// once, not when their leases expire: its registration proves that the
/// earlier process is gone. Nobody else serves the store meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_replica_restarted_under_its_id_takes_its_runs_back_before_their_leases_expire() {
    let schema = TestSchema::create().await;
    let dirs = tempfile::tempdir().expect("temp dir");
    let url = schema.url();
    let mut first = Replica::on_store_with_default_leases(&url, &dirs.path().join("first"), "replica-a");
    let mut client = first.client().await;
    let mut origin = start_run(&mut client, PROMPT).await;
    let mut seen = Vec::new();
    while seen.len() < BEFORE_CRASH {
        seen.push(origin.next().await.expect("a chunk").expect("the stream"));
    }
    let id = seen[0].run_id.clone();
    let killed_at = Instant::now();
    first.kill_hard();
    drop(origin);

    let again = Replica::on_store_with_default_leases(&url, &dirs.path().join("again"), "replica-a");
    let mut client = again.client().await;
    let last_seen = seen.last().expect("chunks").seq;
    let mut followed = subscribe(&mut client, &id, last_seen).await;
    seen.extend(read_until(&mut followed, is_resumed_start).await);
    println!(
        "kill -9, then a restart under the same replica id: the run's next chunk after {:?}",
        killed_at.elapsed()
    );
    let rest = tokio::time::timeout(FINISH_TIMEOUT, collect(followed))
        .await
        .expect("the run finished on the restarted replica")
        .expect("the stream");
    seen.extend(rest);

    assert_contiguous(&seen, 1);
    assert_eq!(finish_reason(&seen), pb::FinishReason::Stop);
    assert_taken_over_before_the_lease_expired(&seen);
    let log = again
        .wait_for_log(|log| log.contains("released the leases of the runs an earlier process"))
        .await;
    assert!(log.contains("runs=1"), "{log}");
}

/// Kills 10 replicas, one at a time, each mid-step, and times the next
/// chunk on the surviving replica; then runs 64 streaming runs at once on
/// two live replicas for 30 s, which saturates a small machine, and counts
/// the takeovers: nobody died, so every one would be false. Default lease
/// settings throughout. Prints its figures with `--nocapture`; asserts that
/// every run finished and that no live replica lost a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn takeover_measured() {
    const KILLS: usize = 10;
    let schema = TestSchema::create().await;
    let dirs = tempfile::tempdir().expect("temp dir");
    let url = schema.url();
    let survivor = Replica::on_store_with_default_leases(&url, &dirs.path().join("b"), "survivor");
    let mut times = Vec::new();
    for round in 0..KILLS {
        let name = format!("victim-{round}");
        let mut victim = Replica::on_store_with_default_leases(&url, &dirs.path().join(&name), &name);
        let (_, seen, took) = kill_mid_step(&mut victim, &survivor).await;
        assert_eq!(finish_reason(&seen), pb::FinishReason::Stop);
        println!("kill {round}: next chunk on the other replica after {took:?}");
        times.push(took);
    }
    times.sort();
    println!(
        "kill -9 -> next chunk on the other replica, {KILLS} kills: min {:?}, median {:?}, max {:?}",
        times[0],
        times[KILLS / 2],
        times[KILLS - 1]
    );
    drop(survivor);

    let pair = Pair::start_with_default_leases().await;
    let (takeovers, runs) = saturate(&pair, 64, Duration::from_secs(30)).await;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "64 runs in flight on two live replicas for 30 s: {runs} runs, {takeovers} takeovers \
         (load average after: {})",
        load.trim()
    );
    assert_eq!(takeovers, 0.0, "a live replica lost a run");
}

/// Keeps `in_flight` streaming runs going, half on each replica, for
/// `period`; returns the takeovers both replicas made and the runs done.
async fn saturate(pair: &Pair, in_flight: usize, period: Duration) -> (f64, usize) {
    let clients = [pair.a.client().await, pair.b.client().await];
    let until = Instant::now() + period;
    let workers: Vec<_> = (0..in_flight)
        .map(|i| {
            let mut client = clients[i % 2].clone();
            tokio::spawn(async move {
                let mut runs = 0;
                while Instant::now() < until {
                    let stream = start_run(&mut client, "stream 300 every 1 ms").await;
                    let chunks = collect(stream).await.expect("the run's stream");
                    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
                    runs += 1;
                }
                runs
            })
        })
        .collect();
    let mut runs = 0;
    for worker in workers {
        runs += worker.await.expect("worker");
    }
    let mut takeovers = 0.0;
    for replica in [&pair.a, &pair.b] {
        let metrics = scrape(replica).await;
        for holder in ["gone", "live", "unknown"] {
            let series = format!("agentd_run_takeovers_total{{holder=\"{holder}\"}}");
            takeovers += metric(&metrics, &series).unwrap_or(0.0);
        }
    }
    (takeovers, runs)
}
