//! The one layer between the runtime and its store. Every call of the
//! runtime to its [`Store`] passes here, through one hook
//! ([`Guard`], a [`StoreHook`] the store is [`Layered`] behind) that does
//! three things and nothing else:
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
//! errors) to the backend's own implementation, by [`Layered`], which
//! forwards every method of every store trait.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{watch, Notify};

use crate::metrics::Metrics;
use crate::store::{Layered, Operation, Store, StoreError, StoreHook};

/// Raises the fence of a [`Guard`], and hears of its refused writes.
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

/// The runtime's hook on its store: fenced, timed, and heard when the
/// store refuses a write.
pub(super) struct Guard {
    metrics: Metrics,
    raised: watch::Receiver<bool>,
    refused: Arc<Notify>,
}

impl Guard {
    /// `inner` behind the guard, timed into `metrics`, with the fence that
    /// stops its writes.
    pub(super) fn wrap(inner: Arc<dyn Store>, metrics: Metrics) -> (Arc<dyn Store>, Fence) {
        let (raise, raised) = watch::channel(false);
        let refused = Arc::new(Notify::new());
        let fence = Fence {
            raise: Arc::new(raise),
            refused: Arc::clone(&refused),
        };
        let guard = Self {
            metrics,
            raised,
            refused,
        };
        (Arc::new(Layered::new(inner, guard)), fence)
    }
}

impl StoreHook for Guard {
    /// A write waits at the fence first (forever once it is raised), the
    /// operation is timed, and a write the store refused tells the fence's
    /// owner. `work` does nothing until awaited, as every async call, so a
    /// fenced write never starts.
    async fn around<T: Send>(
        &self,
        operation: Operation,
        work: impl Future<Output = Result<T, StoreError>> + Send,
    ) -> Result<T, StoreError> {
        {
            if operation.is_write() && *self.raised.borrow() {
                std::future::pending::<()>().await;
            }
            let started = Instant::now();
            let outcome = work.await;
            self.metrics.store_operation(operation.name, started.elapsed());
            if operation.is_write() && matches!(outcome, Err(StoreError::Backend(_) | StoreError::Full(_))) {
                self.refused.notify_one();
            }
            outcome
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::domain::RunId;
    use crate::store::{MemoryStore, RunQuery};

    fn layered() -> (Arc<dyn Store>, Fence, Metrics) {
        let metrics = Metrics::new();
        let (store, fence) = Guard::wrap(Arc::new(MemoryStore::default()), metrics.clone());
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
