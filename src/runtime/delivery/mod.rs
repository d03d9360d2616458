//! Deliveries made from the run events, for any [`Endpoint`]: an
//! operator's webhook (`webhooks/`), the A2A push notifications
//! (`a2a/push/`). The run events are the outbox (each is stored in the
//! write that changed its run); the store's delivery ledger is the rest
//! (`store/deliveries.rs`). Per endpoint, each replica runs two tasks: the
//! enqueuer (`enqueue.rs`) turns the events the endpoint wants into
//! pending deliveries, and the deliverer (`deliver.rs`) claims due ones and
//! sends each as the endpoint's request, on a task of its own; when to
//! retry is `schedule.rs`. At least once, in order per run and target,
//! through crashes and across replicas.
//!
//! It never changes a run, and runs never wait for it: a slow or dead
//! endpoint costs its own tasks only.

mod deliver;
mod enqueue;
mod schedule;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::task::JoinSet;

pub use schedule::RetrySchedule;

use crate::domain::{RunEvent, RunId, RunRecord, Tenant};
pub use crate::store::{ClaimedDelivery, NewDelivery, PushConfig};
use crate::store::{PushConfigStore, RunStore};

use super::{Runtime, RuntimeError};

/// Where a ledger's deliveries go. The enqueuer and the deliverer do the
/// rest (cursor, leases, retries, order per run) the same for every
/// endpoint.
#[async_trait]
pub trait Endpoint: Send + Sync + 'static {
    /// The ledger's name (its cursor's and its deliveries'), in logs and
    /// metrics too.
    fn name(&self) -> &str;
    /// Only this tenant's run events are read (`None`: every tenant's).
    fn tenant(&self) -> Option<&Tenant>;
    /// How long one attempt may take.
    fn timeout(&self) -> Duration;
    /// Attempts in flight at once, per replica.
    fn concurrency(&self) -> usize;
    fn retry(&self) -> &RetrySchedule;
    /// The deliveries `events` (in position order) make.
    async fn deliveries(
        &self,
        reads: &LedgerReads<'_>,
        events: &[RunEvent],
    ) -> Result<Vec<NewDelivery>, RuntimeError>;
    /// The request of one attempt at `delivery` (the deliverer sets its
    /// timeout and sends it); `Err` names why none can be made, and the
    /// attempt fails.
    async fn request(
        &self,
        client: &reqwest::Client,
        reads: &LedgerReads<'_>,
        delivery: &ClaimedDelivery,
    ) -> Result<reqwest::RequestBuilder, String>;
}

/// What an endpoint may read while it makes deliveries and requests: the
/// runs behind the events, every tenant's (an event names its tenant).
pub struct LedgerReads<'a> {
    runs: &'a dyn RunStore,
    push_configs: &'a dyn PushConfigStore,
}

impl<'a> LedgerReads<'a> {
    pub(crate) fn new(runs: &'a dyn RunStore, push_configs: &'a dyn PushConfigStore) -> Self {
        Self { runs, push_configs }
    }

    /// The run `id`, as stored now.
    pub async fn run(&self, id: RunId) -> Result<RunRecord, RuntimeError> {
        Ok(self.runs.load_run(id).await?)
    }

    /// The A2A push configurations of the runs `run_ids`, in one read.
    pub async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, RuntimeError> {
        Ok(self.push_configs.push_configs(run_ids).await?)
    }
}

/// The tables behind [`LedgerReads`], as a ledger's tasks hold them.
#[derive(Clone)]
pub(super) struct ReadTables {
    runs: Arc<dyn RunStore>,
    push_configs: Arc<dyn PushConfigStore>,
}

impl ReadTables {
    pub(super) fn reads(&self) -> LedgerReads<'_> {
        LedgerReads::new(self.runs.as_ref(), self.push_configs.as_ref())
    }
}

/// The tasks that deliver a server's endpoints; dropping this stops them
/// (attempts in flight are abandoned, and their leases run out for a
/// later attempt).
#[derive(Default)]
pub struct DeliveryTasks {
    tasks: JoinSet<()>,
}

/// Why an endpoint's deliveries could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DeliveryStartError(String);

impl DeliveryStartError {
    pub fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

impl Runtime {
    /// Starts delivering `endpoint`'s ledger with `client` into `tasks`:
    /// its enqueuer and its deliverer, as one of the replicas sharing the
    /// store. Reads (or, for a ledger seen for the first time, stores) its
    /// cursor before it returns: call it before serving any request, so
    /// that a new endpoint gets every event from then on.
    pub async fn deliver(
        &self,
        tasks: &mut DeliveryTasks,
        endpoint: Arc<dyn Endpoint>,
        client: reqwest::Client,
    ) -> Result<(), DeliveryStartError> {
        let store = &self.inner.store;
        let shared = store.presence.sharing().is_shared();
        let reads = ReadTables {
            runs: Arc::clone(&store.runs),
            push_configs: Arc::clone(&store.push_configs),
        };
        self.metrics().configure_webhook(endpoint.name());
        let enqueued = Arc::new(Notify::new());
        let cursor = enqueue::start(
            store.run_events.as_ref(),
            store.ledger.as_ref(),
            endpoint.as_ref(),
        )
        .await
        .map_err(|error| DeliveryStartError(format!("reading the cursor of {}: {error}", endpoint.name())))?;
        let enqueuer = enqueue::Enqueuer {
            run_events: Arc::clone(&store.run_events),
            ledger: Arc::clone(&store.ledger),
            reads: reads.clone(),
            shared,
            endpoint: Arc::clone(&endpoint),
            enqueued: Arc::clone(&enqueued),
            cursor,
        };
        let deliverer = deliver::Deliverer {
            ledger: Arc::clone(&store.ledger),
            reads,
            shared,
            endpoint,
            owner: self.replica_id().to_owned(),
            client,
            metrics: self.metrics().clone(),
            enqueued,
        };
        tasks.tasks.spawn(enqueuer.run());
        tasks.tasks.spawn(deliverer.run());
        Ok(())
    }
}
