//! What the server hosting a runtime does with it, beside the API
//! (`api.rs`): register it among the replicas, run its chores (expiry,
//! retention, recovery, the feed from other replicas, deliveries), watch
//! its store's health, read its gauges, and fence it at shutdown.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::domain::{RunStatus, Timestamp};
use crate::store::StoreError;

use super::periodic::spawn_periodic;
use super::{Runtime, RuntimeError};

impl Runtime {
    /// Tells the store that this process executes runs as its replica id,
    /// so that the other replicas take its runs over as soon as it is gone
    /// rather than once their leases expire (see
    /// `Presence::register_replica`). Call it once, before serving.
    pub async fn register_replica(&self) -> Result<(), StoreError> {
        self.inner
            .store
            .presence
            .register_replica(self.replica_id())
            .await
    }

    /// This replica's id among the replicas sharing the store.
    pub fn replica_id(&self) -> &str {
        &self.inner.config.replica_id
    }

    /// Takes over every running run that no process can be executing: with
    /// a store that only this process uses, every one of them (call it
    /// before serving); with a shared store, none (leases decide). Returns
    /// how many runs this replica took over.
    pub async fn recover_at_startup(&self) -> Result<usize, RuntimeError> {
        if self.inner.store.presence.sharing().is_shared() {
            return Ok(0);
        }
        self.recover(Timestamp(i64::MAX)).await
    }

    /// Takes over the running runs orphaned at `now`: their lease expired,
    /// or their holder is gone (`lifecycle/recovery.rs`).
    pub async fn recover(&self, now: Timestamp) -> Result<usize, RuntimeError> {
        self.take_over_orphans(now).await
    }

    /// Starts the task that takes over orphaned runs, every
    /// `LeaseSettings::recovery_interval` (zero disables it).
    pub fn spawn_recovery(&self) -> JoinHandle<()> {
        let interval = self.inner.config.lease.recovery_interval;
        spawn_periodic(&self.inner, interval, |runtime| async move {
            if let Err(error) = runtime.recover(Timestamp::now()).await {
                tracing::warn!(%error, "recovery failed; retrying at the next tick");
            }
        })
    }

    /// The sweep interval this runtime was configured with.
    pub fn sweep_interval(&self) -> Duration {
        self.inner.config.sweep_interval
    }

    /// Starts a task that sweeps every `interval` (the first sweep at once):
    /// suspended runs past their time to live expire, and threads idle
    /// longer than the retention go. A zero interval disables the sweep
    /// (runs then expire only when a request reads them). A failed sweep is
    /// logged and retried at the next tick.
    pub fn spawn_expiry_sweeper(&self, interval: Duration) -> JoinHandle<()> {
        spawn_periodic(&self.inner, interval, |runtime| async move {
            if let Err(error) = runtime.sweep_expired().await {
                tracing::warn!(%error, "expiry sweep failed; retrying at the next tick");
            }
            if let Some(retention) = runtime.inner.config.thread_retention {
                if let Err(error) = runtime.sweep_idle_threads(retention).await {
                    tracing::warn!(%error, "thread retention sweep failed; retrying at the next tick");
                }
            }
        })
    }

    /// Expires every suspended run due now (up to a bound per call); how
    /// many this call expired (`lifecycle/expiry.rs`).
    pub async fn sweep_expired(&self) -> Result<usize, RuntimeError> {
        self.inner.sweep_expired().await
    }

    /// Deletes the threads idle for longer than `retention` (up to a bound
    /// per call); how many (`lifecycle/retention.rs`).
    pub async fn sweep_idle_threads(&self, retention: Duration) -> Result<usize, RuntimeError> {
        self.inner.sweep_idle_threads(retention).await
    }

    /// Starts the bridge from a shared store's feed to this process's live
    /// runs (`fanout/feed.rs`); `None` for a store that one process owns.
    pub fn spawn_feed_bridge(&self) -> Option<JoinHandle<()>> {
        self.inner.bridge_feed()
    }

    /// Whether the store answers and accepts writes, for the health check.
    pub async fn check_store(&self) -> Result<(), StoreError> {
        self.inner.store.presence.ping().await
    }

    /// How often the server checks the store's health.
    pub fn health_check_interval(&self) -> Duration {
        self.inner.config.health_check_interval
    }

    /// Resolves once a write of this runtime was refused by the store
    /// (unavailable, or full) since the last call: for the health watch,
    /// which checks the store then instead of at its next tick.
    pub async fn write_refused(&self) {
        self.inner.fence.write_refused().await;
    }

    /// Suspended runs by agent, counted by the store (every replica's).
    pub async fn suspended_runs_by_agent(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        self.inner
            .store
            .queries
            .count_runs_by_agent(RunStatus::Suspended)
            .await
    }

    /// Pending deliveries by ledger, counted by the store.
    pub async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        self.inner.store.ledger.pending_deliveries().await
    }

    /// Runs executing in this process right now.
    pub fn executing_runs(&self) -> usize {
        self.inner.live.executing()
    }

    /// For shutdown only: from now on this runtime changes no run in the
    /// store (writes wait forever), so that the runs still executing here
    /// stay as last committed, RUNNING, for another process to take over.
    pub fn fence(&self) {
        self.inner.fence.raise();
    }
}
