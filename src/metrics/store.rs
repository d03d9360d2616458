//! A run store that times every operation of the store it wraps
//! (`agentd_store_operation_duration_seconds{operation}`) and otherwise
//! passes each call through untouched: same results, same errors. Every
//! trait method is delegated, so a backend's own implementation is the one
//! that runs.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;

use super::Metrics;
use crate::domain::{
    Event, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp,
};
use crate::store::{RunFeed, RunQuery, RunStore, StoreError};

pub struct MeasuredStore {
    inner: Arc<dyn RunStore>,
    metrics: Metrics,
}

impl MeasuredStore {
    pub fn wrap(inner: Arc<dyn RunStore>, metrics: Metrics) -> Arc<dyn RunStore> {
        Arc::new(Self { inner, metrics })
    }

    async fn timed<T>(&self, operation: &'static str, work: impl Future<Output = T>) -> T {
        let started = Instant::now();
        let outcome = work.await;
        self.metrics.store_operation(operation, started.elapsed());
        outcome
    }
}

#[async_trait]
impl RunStore for MeasuredStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        self.timed("create_run", self.inner.create_run(run, events)).await
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError> {
        self.timed("commit", self.inner.commit(run, expected_version, events))
            .await
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.timed("load_run", self.inner.load_run(id)).await
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        self.timed("read_events", self.inner.read_events(id, after_seq))
            .await
    }

    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError> {
        self.timed(
            "find_run_by_request_id",
            self.inner.find_run_by_request_id(tenant, request_id),
        )
        .await
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        self.timed("list_runs", self.inner.list_runs(query)).await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.timed("due_suspensions", self.inner.due_suspensions(now, limit))
            .await
    }

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        self.timed("count_runs_by_agent", self.inner.count_runs_by_agent(status))
            .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.timed("ping", self.inner.ping()).await
    }

    async fn append_events(
        &self,
        id: RunId,
        expected_version: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        self.timed(
            "append_events",
            self.inner
                .append_events(id, expected_version, lease_expires_at, events),
        )
        .await
    }

    async fn expired_leases(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.timed("expired_leases", self.inner.expired_leases(now, limit))
            .await
    }

    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError> {
        self.timed("load_thread", self.inner.load_thread(tenant, id))
            .await
    }

    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError> {
        self.timed("thread_runs", self.inner.thread_runs(tenant, id))
            .await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
        self.timed("list_threads", self.inner.list_threads(query)).await
    }

    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError> {
        self.timed("delete_thread", self.inner.delete_thread(tenant, id))
            .await
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        self.timed("idle_threads", self.inner.idle_threads(cutoff, limit))
            .await
    }

    fn feed(&self) -> Option<Arc<dyn RunFeed>> {
        self.inner.feed()
    }
}
