//! The shutdown fence: once a server's drain period is over, this process
//! must change no run any more. Runs still executing here then stay in the
//! store exactly as their last commit left them (RUNNING, with a lease that
//! runs out) for a restart or another replica to take over; in particular,
//! the streams the server closes on its way out must not make a run with
//! `on_disconnect = cancel` cancel itself. The fence is a store wrapper:
//! before it is raised every call passes through; after, every write waits
//! until the process ends, and reads still answer.
//!
//! Every write passes here, so this is also where the runtime hears of a
//! store that refuses writes (unavailable, full): the health watch is told
//! at once instead of at its next probe.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::{watch, Notify};

use crate::domain::{
    Event, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp,
};
use crate::store::{RunFeed, RunQuery, RunStore, StoreError};

/// Raises the fence of a [`FencedStore`], and hears of its refused writes.
#[derive(Clone, Debug)]
pub(super) struct Fence {
    raise: Arc<watch::Sender<bool>>,
    refused: Arc<Notify>,
}

impl Fence {
    /// From now on, writes through the fenced store never complete.
    pub(super) fn raise(&self) {
        if !self.raise.send_replace(true) {
            tracing::info!("run store fenced: this process changes no run any more");
        }
    }

    /// Resolves after a write through the fenced store failed because the
    /// store refused it (at once if one did since the last call).
    pub(super) async fn write_refused(&self) {
        self.refused.notified().await;
    }
}

/// A store whose writes stop once its fence is raised.
pub(super) struct FencedStore {
    inner: Arc<dyn RunStore>,
    raised: watch::Receiver<bool>,
    refused: Arc<Notify>,
}

impl FencedStore {
    pub(super) fn wrap(inner: Arc<dyn RunStore>) -> (Arc<dyn RunStore>, Fence) {
        let (raise, raised) = watch::channel(false);
        let refused = Arc::new(Notify::new());
        let fence = Fence {
            raise: Arc::new(raise),
            refused: Arc::clone(&refused),
        };
        (
            Arc::new(Self {
                inner,
                raised,
                refused,
            }),
            fence,
        )
    }

    /// Returns at once while the fence is down; never once it is up.
    async fn pass(&self) {
        if *self.raised.borrow() {
            std::future::pending::<()>().await;
        }
    }

    /// `written`, the outcome of a write, after telling the fence's owner
    /// if the store refused it.
    fn heard(&self, written: Result<(), StoreError>) -> Result<(), StoreError> {
        if let Err(StoreError::Backend(_) | StoreError::Full(_)) = &written {
            self.refused.notify_one();
        }
        written
    }
}

#[async_trait]
impl RunStore for FencedStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        self.pass().await;
        self.heard(self.inner.create_run(run, events).await)
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError> {
        self.pass().await;
        self.heard(self.inner.commit(run, expected_version, events).await)
    }

    async fn append_events(
        &self,
        id: RunId,
        expected_version: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        self.pass().await;
        let appended = self
            .inner
            .append_events(id, expected_version, lease_expires_at, events)
            .await;
        self.heard(appended)
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

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        self.inner.count_runs_by_agent(status).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
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
        self.pass().await;
        self.heard(self.inner.delete_thread(tenant, id).await)
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        self.inner.idle_threads(cutoff, limit).await
    }

    fn feed(&self) -> Option<Arc<dyn RunFeed>> {
        self.inner.feed()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::MemoryStore;

    #[tokio::test]
    async fn writes_wait_once_the_fence_is_up_and_reads_go_on() {
        let (store, fence) = FencedStore::wrap(Arc::new(MemoryStore::default()));
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
    }
}
