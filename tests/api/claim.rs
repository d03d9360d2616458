//! A Resume's claim in a store that one process owns: taken in the process,
//! and stored by the first write of the continuation, with its first chunks.
//! The store here holds every write on request, so that the tests can look
//! at the run while the claim is taken but not stored yet.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use agentd::agent::{AgentRegistry, AgentSpec};
use agentd::chunk::Event;
use agentd::pb::{self, FinishReason, RunStatus};
use agentd::run::{RunId, RunRecord, RunStatus as StoredStatus};
use agentd::runtime::{Runtime, RuntimeConfig};
use agentd::store::{RunQuery, RunStore, SqliteStore, StoreError};
use agentd::tenant::Tenant;
use agentd::thread::{ThreadId, ThreadQuery, ThreadRecord};
use agentd::time::Timestamp;
use async_trait::async_trait;
use tokio::sync::watch;
use tonic::Code;

use crate::helpers::{collect, finish_reason, run_id, status_of, TestServer};

/// A SQLite store whose writes of existing runs wait while held, and that
/// counts them.
struct HeldStore {
    inner: SqliteStore,
    held: watch::Sender<bool>,
    writes: AtomicUsize,
}

impl HeldStore {
    async fn pass(&self) {
        let mut held = self.held.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = held.wait_for(|held| !held).await;
        self.writes.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl RunStore for HeldStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        self.inner.create_run(run, events).await
    }

    async fn commit(&self, run: &RunRecord, expected: u64, events: &[Event]) -> Result<(), StoreError> {
        self.pass().await;
        self.inner.commit(run, expected, events).await
    }

    async fn append_events(
        &self,
        id: RunId,
        expected: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        self.pass().await;
        self.inner
            .append_events(id, expected, lease_expires_at, events)
            .await
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.inner.load_run(id).await
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        self.inner.read_events(id, after_seq).await
    }

    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError> {
        self.inner.find_run_by_request_id(tenant, request_id).await
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        self.inner.list_runs(query).await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.inner.due_suspensions(now, limit).await
    }

    async fn count_runs_by_agent(&self, status: StoredStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        self.inner.count_runs_by_agent(status).await
    }

    async fn expired_leases(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.inner.expired_leases(now, limit).await
    }

    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError> {
        self.inner.load_thread(tenant, id).await
    }

    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError> {
        self.inner.thread_runs(tenant, id).await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
        self.inner.list_threads(query).await
    }

    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError> {
        self.inner.delete_thread(tenant, id).await
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        self.inner.idle_threads(cutoff, limit).await
    }
}

/// A server on a held store, with a run suspended on the plan question.
async fn suspended_run() -> (TestServer, Arc<HeldStore>, String, tempfile::TempDir) {
    let temp = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(HeldStore {
        inner: SqliteStore::open(temp.path().join("agentd.sqlite3")).expect("store"),
        held: watch::channel(false).0,
        writes: AtomicUsize::new(0),
    });
    let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
    let store_dyn: Arc<dyn RunStore> = Arc::clone(&store) as Arc<dyn RunStore>;
    let server = TestServer::serve(Runtime::new(agents, store_dyn, RuntimeConfig::default())).await;
    let id = run_id(&server.stream("pick a plan").await);
    (server, store, id, temp)
}

/// Waits until `writes` writes of existing runs are waiting or done.
async fn wait_for_writes(store: &HeldStore, writes: usize) {
    let waiting = async {
        while store.writes.load(Ordering::SeqCst) + store.held.receiver_count() < writes {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the continuation reached the store");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_is_stored_by_the_continuations_one_write() {
    let (server, store, id, _temp) = suspended_run().await;
    let suspended = server.get_run(&id).await;
    store.held.send_replace(true);
    let resumed = tokio::spawn({
        let server_client = server.client();
        let id = id.clone();
        async move {
            let mut client = server_client;
            let request =
                crate::helpers::resume_request(&id, "", pb::resume_request::Answer::Text("Pro".into()));
            collect(client.resume(request).await?.into_inner()).await
        }
    });
    wait_for_writes(&store, 1).await;

    // Claimed, not stored: the store still has the suspension as it was,
    // and a second Resume finds the run taken.
    assert_eq!(server.get_run(&id).await, suspended);
    let second = server.resume_text(&id, "Basic").await.unwrap_err();
    assert_eq!(second.code(), Code::FailedPrecondition, "{second:?}");

    store.held.send_replace(false);
    let chunks = resumed.await.unwrap().expect("the Resume's stream");
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert_eq!(run.final_text, "Thanks! You answered: Pro.");
    assert_eq!(chunks.first().unwrap().seq, suspended.last_seq + 1);
    assert_eq!(run.last_seq, chunks.last().unwrap().seq);
    // The claim, the answer's result and the final text: one write, or two
    // when the step's chunks outlived their linger (a preempted thread) and
    // the flusher stored them, with the claim, before the finish.
    let writes = store.writes.load(Ordering::SeqCst);
    assert!((1..=2).contains(&writes), "{writes} writes");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_waits_for_the_claims_write() {
    let (server, store, id, _temp) = suspended_run().await;
    store.held.send_replace(true);
    let resumed = tokio::spawn({
        let mut client = server.client();
        let request = crate::helpers::resume_request(&id, "", pb::resume_request::Answer::Text("Pro".into()));
        async move { collect(client.resume(request).await?.into_inner()).await }
    });
    wait_for_writes(&store, 1).await;

    // The continuation's step is done and its write waits: the cancel
    // waits for the execution rather than writing under it.
    let cancel = tokio::spawn({
        let mut client = server.client();
        let request = pb::CancelRunRequest {
            run_id: id.clone(),
            reason: "too late".into(),
        };
        async move { client.cancel_run(request).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!cancel.is_finished(), "the cancel waits for the claim's write");
    store.held.send_replace(false);

    // The execution ends the run its way, and the cancel reports that: the
    // step had finished (it almost always has: its write was waiting), so
    // the run completed and the cancel is refused; or the step was still
    // going, and the execution itself stored the cancellation.
    let cancelled = cancel.await.unwrap();
    let chunks = resumed.await.unwrap().expect("the Resume's stream");
    let run = server.get_run(&id).await;
    match cancelled {
        Err(refused) => {
            assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
            assert_eq!(finish_reason(&chunks), FinishReason::Stop);
            assert_eq!(status_of(&run), RunStatus::Completed);
        }
        Ok(_) => {
            assert_eq!(finish_reason(&chunks), FinishReason::Cancelled);
            assert_eq!(status_of(&run), RunStatus::Cancelled);
        }
    }
    assert_eq!(run.last_seq, chunks.last().unwrap().seq);
}
