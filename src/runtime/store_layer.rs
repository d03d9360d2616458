//! The one layer between the runtime and its store. Every call of the
//! runtime to its [`RunStore`] passes here, through one helper
//! ([`StoreLayer::call`]) that does three things and nothing else:
//!
//! - the shutdown fence: once a server's drain period is over, this process
//!   must change no run any more. Runs still executing here then stay in
//!   the store exactly as their last commit left them (RUNNING, with a
//!   lease that runs out) for a restart or another replica to take over;
//!   in particular, the streams the server closes on its way out must not
//!   make a run with `on_disconnect = cancel` cancel itself. Before the
//!   fence is raised every call passes through; after, every write waits
//!   until the process ends, and reads still answer.
//! - timing: every operation is observed, by name, in
//!   `agentd_store_operation_duration_seconds{operation}` (the wait at the
//!   fence is not part of it).
//! - refusals: every write passes here, so this is also where the runtime
//!   hears of a store that refuses writes (unavailable, full): the health
//!   watch is told at once instead of at its next probe.
//!
//! Otherwise each call is passed through untouched (same results, same
//! errors) to the backend's own implementation: the trait has no default
//! methods, so a method added to it that this layer does not implement is
//! a compile error, not a silent fallback.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::{watch, Notify};

use crate::domain::{
    Event, EventPosition, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp,
};
use crate::metrics::Metrics;
use crate::store::{
    AttemptOutcome, DeliveryClaim, DeliveryId, NewDelivery, Orphan, PushConfig, RunEventPage, RunQuery,
    RunStore, Sharing, StoreError,
};

/// Raises the fence of a [`StoreLayer`], and hears of its refused writes.
#[derive(Clone, Debug)]
pub(super) struct Fence {
    raise: Arc<watch::Sender<bool>>,
    refused: Arc<Notify>,
}

impl Fence {
    /// From now on, writes through the layer never complete.
    pub(super) fn raise(&self) {
        if !self.raise.send_replace(true) {
            tracing::info!("run store fenced: this process changes no run any more");
        }
    }

    /// Resolves after a write through the layer failed because the store
    /// refused it (at once if one did since the last call).
    pub(super) async fn write_refused(&self) {
        self.refused.notified().await;
    }
}

/// Whether an operation changes runs, so that the fence stops it and a
/// refusal of it is heard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

use Access::{Read, Write};

/// The runtime's view of its store: fenced, timed, and heard when it
/// refuses a write.
pub(super) struct StoreLayer {
    inner: Arc<dyn RunStore>,
    metrics: Metrics,
    raised: watch::Receiver<bool>,
    refused: Arc<Notify>,
}

impl StoreLayer {
    /// `inner` behind the layer, timed into `metrics`, with the fence that
    /// stops its writes.
    pub(super) fn wrap(inner: Arc<dyn RunStore>, metrics: Metrics) -> (Arc<dyn RunStore>, Fence) {
        let (raise, raised) = watch::channel(false);
        let refused = Arc::new(Notify::new());
        let fence = Fence {
            raise: Arc::new(raise),
            refused: Arc::clone(&refused),
        };
        let layer = Self {
            inner,
            metrics,
            raised,
            refused,
        };
        (Arc::new(layer), fence)
    }

    /// Runs `work`, the store's `operation`: a write waits at the fence
    /// first (forever once it is raised), the operation is timed, and a
    /// write the store refused tells the fence's owner. `work` does nothing
    /// until awaited, as every async call, so a fenced write never starts.
    async fn call<T>(
        &self,
        access: Access,
        operation: &'static str,
        work: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        if access == Access::Write && *self.raised.borrow() {
            std::future::pending::<()>().await;
        }
        let started = Instant::now();
        let outcome = work.await;
        self.metrics.store_operation(operation, started.elapsed());
        if let (Access::Write, Err(StoreError::Backend(_) | StoreError::Full(_))) = (access, &outcome) {
            self.refused.notify_one();
        }
        outcome
    }
}

#[async_trait]
impl RunStore for StoreLayer {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        self.call(Write, "create_run", self.inner.create_run(run, events))
            .await
    }

    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError> {
        self.call(Read, "load_thread", self.inner.load_thread(tenant, id))
            .await
    }

    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError> {
        self.call(Read, "thread_runs", self.inner.thread_runs(tenant, id))
            .await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
        self.call(Read, "list_threads", self.inner.list_threads(query))
            .await
    }

    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError> {
        self.call(Write, "delete_thread", self.inner.delete_thread(tenant, id))
            .await
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        self.call(Read, "idle_threads", self.inner.idle_threads(cutoff, limit))
            .await
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError> {
        let work = self.inner.commit(run, expected_version, events);
        self.call(Write, "commit", work).await
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.call(Read, "load_run", self.inner.load_run(id)).await
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        self.call(Read, "read_events", self.inner.read_events(id, after_seq))
            .await
    }

    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError> {
        let work = self.inner.find_run_by_request_id(tenant, request_id);
        self.call(Read, "find_run_by_request_id", work).await
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        self.call(Read, "list_runs", self.inner.list_runs(query)).await
    }

    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError> {
        self.call(Read, "count_runs", self.inner.count_runs(query)).await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.call(Read, "due_suspensions", self.inner.due_suspensions(now, limit))
            .await
    }

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        let work = self.inner.count_runs_by_agent(status);
        self.call(Read, "count_runs_by_agent", work).await
    }

    /// A read for the fence: the probe writes a row of the backend's own
    /// but changes no run, so the health check goes on answering during
    /// the drain; its failures are the health watch's own answer.
    async fn ping(&self) -> Result<(), StoreError> {
        self.call(Read, "ping", self.inner.ping()).await
    }

    async fn append_events(
        &self,
        id: RunId,
        expected_version: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        let work = self
            .inner
            .append_events(id, expected_version, lease_expires_at, events);
        self.call(Write, "append_events", work).await
    }

    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError> {
        self.call(Read, "orphaned_runs", self.inner.orphaned_runs(now, limit))
            .await
    }

    /// Changes no run, so the fence does not stop it.
    async fn register_replica(&self, replica_id: &str) -> Result<(), StoreError> {
        self.call(Read, "register_replica", self.inner.register_replica(replica_id))
            .await
    }

    /// A property of the store, not an operation: neither fenced nor timed.
    fn sharing(&self) -> Sharing {
        self.inner.sharing()
    }

    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError> {
        let work = self.inner.read_run_events(tenant, after, limit);
        self.call(Read, "read_run_events", work).await
    }

    async fn run_events_head(&self) -> Result<EventPosition, StoreError> {
        self.call(Read, "run_events_head", self.inner.run_events_head())
            .await
    }

    /// Not an operation: neither fenced nor timed.
    fn run_events_signal(&self) -> tokio::sync::watch::Receiver<()> {
        self.inner.run_events_signal()
    }

    /// A write: a webhook seen for the first time stores its cursor.
    async fn webhook_cursor(&self, webhook: &str, start: EventPosition) -> Result<EventPosition, StoreError> {
        self.call(Write, "webhook_cursor", self.inner.webhook_cursor(webhook, start))
            .await
    }

    async fn enqueue_deliveries(
        &self,
        webhook: &str,
        from: EventPosition,
        to: EventPosition,
        deliveries: &[NewDelivery],
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let work = self.inner.enqueue_deliveries(webhook, from, to, deliveries, now);
        self.call(Write, "enqueue_deliveries", work).await
    }

    async fn claim_deliveries(
        &self,
        webhook: &str,
        owner: &str,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    ) -> Result<DeliveryClaim, StoreError> {
        let work = self
            .inner
            .claim_deliveries(webhook, owner, now, lease_until, limit);
        self.call(Write, "claim_deliveries", work).await
    }

    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let work = self.inner.finish_delivery(id, attempt, outcome, now);
        self.call(Write, "finish_delivery", work).await
    }

    async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        self.call(Read, "pending_deliveries", self.inner.pending_deliveries())
            .await
    }

    async fn put_push_config(&self, config: &PushConfig) -> Result<(), StoreError> {
        self.call(Write, "put_push_config", self.inner.put_push_config(config))
            .await
    }

    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError> {
        self.call(Read, "push_configs", self.inner.push_configs(run_ids))
            .await
    }

    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError> {
        self.call(
            Write,
            "delete_push_config",
            self.inner.delete_push_config(run_id, id),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::MemoryStore;

    fn layered() -> (Arc<dyn RunStore>, Fence, Metrics) {
        let metrics = Metrics::new();
        let (store, fence) = StoreLayer::wrap(Arc::new(MemoryStore::default()), metrics.clone());
        (store, fence, metrics)
    }

    #[tokio::test]
    async fn writes_wait_once_the_fence_is_up_and_reads_go_on() {
        let (store, fence, _) = layered();
        let query = RunQuery {
            limit: 10,
            ..RunQuery::default()
        };
        assert!(store.list_runs(&query).await.unwrap().is_empty());
        fence.raise();
        let write = store.append_events(RunId::new(), 1, None, &[]);
        assert!(tokio::time::timeout(Duration::from_millis(50), write)
            .await
            .is_err());
        assert!(store.list_runs(&query).await.unwrap().is_empty());
        store.ping().await.expect("the probe answers behind the fence");
    }

    #[tokio::test]
    async fn every_operation_is_timed_under_its_name() {
        let (store, _, metrics) = layered();
        let query = RunQuery {
            limit: 10,
            ..RunQuery::default()
        };
        store.list_runs(&query).await.unwrap();
        let missing = store.append_events(RunId::new(), 1, None, &[]).await;
        assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
        let text = metrics
            .render(crate::metrics::Format::Prometheus)
            .expect("render");
        for operation in ["list_runs", "append_events"] {
            let series =
                format!("agentd_store_operation_duration_seconds_count{{operation=\"{operation}\"}} 1");
            assert!(text.contains(&series), "{series} in {text}");
        }
    }
}
