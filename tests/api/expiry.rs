//! Suspended runs expire after their time to live: the expiry sweep marks
//! them EXPIRED on its own (no GetRun needed), once, however many replicas
//! sweep the same store, and never before they are due.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentd::agent::{AgentRegistry, AgentSpec};
use agentd::domain::{RunRecord, RunStatus as Status, Timestamp};
use agentd::pb::{self, RunStatus};
use agentd::runtime::{Runtime, RuntimeConfig};
use agentd::store::{SqliteStore, Store};
use tonic::Code;

use crate::helpers::*;
use crate::store::suspended_run;

fn micros(time: &prost_types::Timestamp) -> i64 {
    time.seconds * 1_000_000 + i64::from(time.nanos) / 1_000
}

fn micros_now() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since.as_micros()).expect("micros fit")
}

async fn listed(server: &TestServer, status: RunStatus) -> Vec<pb::Run> {
    let request = pb::ListRunsRequest {
        status: status as i32,
        ..Default::default()
    };
    let page = server.client().list_runs(request).await.expect("ListRuns");
    page.into_inner().runs
}

fn ids(runs: &[pb::Run]) -> Vec<&str> {
    runs.iter().map(|run| run.run_id.as_str()).collect()
}

#[tokio::test]
async fn the_sweeper_expires_a_run_after_its_time_to_live() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    settings.server.sweep_interval = Duration::from_millis(100);
    let server = TestServer::start_with(settings).await;

    let before = micros_now();
    let chunks = server
        .start_run(pb::StreamAgentRequest {
            prompt: "pick a plan".into(),
            options: Some(pb::RunOptions {
                suspend_ttl_seconds: 1,
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .expect("StreamAgent");
    let after = micros_now();
    let id = run_id(&chunks);
    let run = server.get_run(&id).await;

    // The suspension says when it expires: one second after it was stored.
    let suspended = suspensions(&chunks);
    let expires_at = suspended[0].expires_at.expect("expires_at");
    let expires = micros(&expires_at);
    let slack = 1_000;
    assert!(
        (before + 1_000_000 - slack..=after + 1_000_000 + slack).contains(&expires),
        "expires_at {expires} is not 1 s after the suspension ({before}..{after})"
    );
    assert_eq!(status_of(&run), RunStatus::Suspended, "not due yet");
    assert_eq!(run.expires_at, Some(expires_at));
    assert_eq!(run.pending[0].expires_at, Some(expires_at));
    // A run on the server's time to live (7 days) beside it.
    let lasting = run_id(&server.stream("pick a plan").await);

    // The sweeper, not a read, marks it expired: ListRuns never expires.
    let mut expired = Vec::new();
    for _ in 0..100 {
        expired = listed(&server, RunStatus::Expired).await;
        if !expired.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        ids(&expired),
        [id.as_str()],
        "the sweeper expired exactly the due run"
    );
    let expired_at = micros(expired[0].updated_at.as_ref().expect("updated_at"));
    assert!(expired_at >= expires, "expired before it was due");
    assert!(expired[0].pending.is_empty());
    assert_eq!(expired[0].expires_at, None);
    assert_eq!(
        ids(&listed(&server, RunStatus::Suspended).await),
        [lasting.as_str()]
    );

    let refused = expect_code(server.resume_text(&id, "Pro").await, Code::FailedPrecondition);
    assert!(refused.message().contains("expired"), "{refused:?}");
    assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Expired);
    // The other run is still answerable.
    let resumed = server.resume_text(&lasting, "Pro").await.expect("Resume");
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);
}

/// A runtime over `store`, as one replica of several would build it.
fn replica(store: Arc<dyn Store>) -> Runtime {
    let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
    Runtime::new(agents, store, RuntimeConfig::default())
}

/// A suspended run that expires `offset_micros` from now (negative: due).
fn expiring_in(offset_micros: i64) -> RunRecord {
    let mut run = suspended_run("assistant");
    crate::store::expire_at(&mut run, Timestamp(Timestamp::now().0 + offset_micros));
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_sweeping_one_store_expire_each_due_run_once() {
    let temp = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(temp.path().join("runs.sqlite3")).expect("open"));
    // More due runs than one sweep batch reads.
    let due: Vec<RunRecord> = (0..150).map(|i| expiring_in(-10_000 - i * 1_000)).collect();
    let later = expiring_in(3_600_000_000);
    for run in due.iter().chain([&later]) {
        store.create_run(run, &[]).await.expect("create");
    }

    let (a, b) = (replica(Arc::clone(&store)), replica(Arc::clone(&store)));
    let (swept_a, swept_b) = tokio::join!(a.sweep_expired(), b.sweep_expired());
    let (swept_a, swept_b) = (swept_a.expect("sweep a"), swept_b.expect("sweep b"));
    assert!(swept_a + swept_b >= due.len(), "{swept_a} + {swept_b} swept");

    for run in &due {
        let stored = store.load_run(run.id).await.expect("load");
        assert_eq!(stored.status(), Status::Expired);
        // One compare-and-set won: the version moved exactly once, and
        // nothing else about the run changed.
        assert_eq!(stored.version(), run.version() + 1);
        // The deadline's decision on the call that waited is recorded.
        let decisions = &stored.state.decisions;
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        assert_eq!(decisions[0].decided_by, "deadline");
        let mut state = stored.state.clone();
        (state.decisions, state.changed_by) = (Vec::new(), 0..0);
        assert_eq!(state, run.state);
        assert_eq!(stored.phase(), &agentd::domain::Phase::Expired);
    }
    assert_eq!(
        store.load_run(later.id).await.expect("load"),
        later,
        "not due: untouched"
    );
    assert_eq!(
        a.sweep_expired().await.expect("sweep"),
        0,
        "nothing is left to sweep"
    );
}

#[tokio::test]
async fn the_sweeper_task_runs_on_its_interval_and_ends_with_its_runtime() {
    let temp = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(temp.path().join("runs.sqlite3")).expect("open"));
    let runtime = replica(Arc::clone(&store));

    // A zero interval disables the sweep.
    let disabled = runtime.spawn_expiry_sweeper(Duration::ZERO);
    tokio::time::timeout(Duration::from_secs(5), disabled)
        .await
        .expect("a disabled sweeper ends at once")
        .expect("sweeper task");

    let sweeper = runtime.spawn_expiry_sweeper(Duration::from_millis(20));
    let run = expiring_in(-1_000);
    store.create_run(&run, &[]).await.expect("create");
    let mut status = Status::Suspended;
    for _ in 0..100 {
        status = store.load_run(run.id).await.expect("load").status();
        if status == Status::Expired {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, Status::Expired, "the sweeper expired the run");

    drop(runtime);
    tokio::time::timeout(Duration::from_secs(5), sweeper)
        .await
        .expect("the sweeper ends once its runtime is gone")
        .expect("sweeper task");
}
