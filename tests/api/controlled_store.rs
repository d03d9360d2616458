//! A SQLite store that a test controls: its writes of existing runs wait
//! while it is held (and are counted), and every write (a new run's too)
//! fails while it refuses, as a store on a full or broken disk does; the
//! health probe fails then too. The store itself is real; only the timing
//! and the failures are the test's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd::agent::{AgentRegistry, AgentSpec};
use agentd::domain::{
    Event, EventPosition, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp,
};
use agentd::runtime::{Runtime, RuntimeConfig};
use agentd::store::{
    AttemptOutcome, DeliveryClaim, DeliveryId, NewDelivery, Orphan, RunEventPage, RunQuery, RunStore,
    Sharing, SqliteStore, StoreError,
};
use async_trait::async_trait;
use tokio::sync::watch;

use crate::helpers::TestServer;

pub struct ControlledStore {
    inner: SqliteStore,
    held: watch::Sender<bool>,
    writes: AtomicUsize,
    refusal: Mutex<Option<StoreError>>,
}

impl ControlledStore {
    /// A server with the default agents on a fresh controlled store.
    pub async fn serve(config: RuntimeConfig) -> (TestServer, Arc<Self>, tempfile::TempDir) {
        let temp = tempfile::tempdir().expect("temp dir");
        let store = Arc::new(Self {
            inner: SqliteStore::open(temp.path().join("agentd.sqlite3")).expect("store"),
            held: watch::channel(false).0,
            writes: AtomicUsize::new(0),
            refusal: Mutex::new(None),
        });
        let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
        let store_dyn: Arc<dyn RunStore> = Arc::clone(&store) as Arc<dyn RunStore>;
        let server = TestServer::serve(Runtime::new(agents, store_dyn, config)).await;
        (server, store, temp)
    }

    /// Holds writes of existing runs (`true`) or lets them through.
    pub fn hold(&self, held: bool) {
        self.held.send_replace(held);
    }

    /// From now on every write fails with `refusal` (`None`: none does).
    pub fn refuse(&self, refusal: Option<StoreError>) {
        *self.refusal.lock().unwrap() = refusal;
    }

    fn refused(&self) -> Result<(), StoreError> {
        match self.refusal.lock().unwrap().clone() {
            Some(refusal) => Err(refusal),
            None => Ok(()),
        }
    }

    /// Waits while held, counts the write, then fails it if refusing.
    async fn pass(&self) -> Result<(), StoreError> {
        let mut held = self.held.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = held.wait_for(|held| !held).await;
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.refused()
    }

    /// Waits until `writes` writes of existing runs are waiting or done.
    pub async fn wait_for_writes(&self, writes: usize) {
        let waiting = async {
            while self.writes.load(Ordering::SeqCst) + self.held.receiver_count() < writes {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the writes reached the store");
    }
}

#[async_trait]
impl RunStore for ControlledStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        self.refused()?;
        self.inner.create_run(run, events).await
    }

    async fn commit(&self, run: &RunRecord, expected: u64, events: &[Event]) -> Result<(), StoreError> {
        self.pass().await?;
        self.inner.commit(run, expected, events).await
    }

    async fn append_events(
        &self,
        id: RunId,
        expected: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        self.pass().await?;
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

    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError> {
        self.inner.count_runs(query).await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.inner.due_suspensions(now, limit).await
    }

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        self.inner.count_runs_by_agent(status).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.refused()?;
        self.inner.ping().await
    }

    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError> {
        self.inner.orphaned_runs(now, limit).await
    }

    async fn register_replica(&self, replica_id: &str) -> Result<(), StoreError> {
        self.inner.register_replica(replica_id).await
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
        self.refused()?;
        self.inner.delete_thread(tenant, id).await
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        self.inner.idle_threads(cutoff, limit).await
    }

    fn sharing(&self) -> Sharing {
        self.inner.sharing()
    }

    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError> {
        self.inner.read_run_events(tenant, after, limit).await
    }

    async fn run_events_head(&self) -> Result<EventPosition, StoreError> {
        self.inner.run_events_head().await
    }

    fn run_events_signal(&self) -> watch::Receiver<()> {
        self.inner.run_events_signal()
    }

    async fn webhook_cursor(&self, webhook: &str, start: EventPosition) -> Result<EventPosition, StoreError> {
        self.refused()?;
        self.inner.webhook_cursor(webhook, start).await
    }

    async fn enqueue_deliveries(
        &self,
        webhook: &str,
        from: EventPosition,
        to: EventPosition,
        deliveries: &[NewDelivery],
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.refused()?;
        self.inner
            .enqueue_deliveries(webhook, from, to, deliveries, now)
            .await
    }

    async fn claim_deliveries(
        &self,
        webhook: &str,
        owner: &str,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    ) -> Result<DeliveryClaim, StoreError> {
        self.refused()?;
        self.inner
            .claim_deliveries(webhook, owner, now, lease_until, limit)
            .await
    }

    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        self.refused()?;
        self.inner.finish_delivery(id, attempt, outcome, now).await
    }

    async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        self.inner.pending_deliveries().await
    }

    async fn put_push_config(&self, config: &agentd::store::PushConfig) -> Result<(), StoreError> {
        self.inner.put_push_config(config).await
    }

    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<agentd::store::PushConfig>, StoreError> {
        self.inner.push_configs(run_ids).await
    }

    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError> {
        self.inner.delete_push_config(run_id, id).await
    }
}
