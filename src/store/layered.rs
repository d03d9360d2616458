//! A store behind a hook: [`Layered`] passes every operation of every
//! store trait to its inner store through one function of its
//! [`StoreHook`], which may wait, time, refuse or count it. The forwarding
//! is written here once for every hook, so that a wrapper is a hook of a
//! few lines, and a method added to a store trait is a compile error here
//! until it is forwarded, never a method some wrapper forgot.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;

use super::{
    AttemptOutcome, DeliveryClaim, DeliveryId, DeliveryLedger, NewDelivery, Orphan, Presence, PushConfig,
    PushConfigStore, RunEventLog, RunEventPage, RunQueries, RunQuery, RunStore, Sharing, Store, StoreError,
    ThreadStore,
};
use crate::domain::{
    Event, EventPosition, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp,
};

/// Whether an operation changes what the store holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// One store operation, as a hook sees it: the trait method's name, and
/// whether it writes. The health probe ([`Presence::ping`]) and a
/// replica's registration change no run, and count as reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    pub name: &'static str,
    pub access: Access,
}

impl Operation {
    const fn read(name: &'static str) -> Self {
        Self {
            name,
            access: Access::Read,
        }
    }

    const fn write(name: &'static str) -> Self {
        Self {
            name,
            access: Access::Write,
        }
    }

    pub fn is_write(self) -> bool {
        self.access == Access::Write
    }
}

/// What a wrapper does around each operation of the store it wraps.
pub trait StoreHook: Send + Sync + 'static {
    /// Runs `work`, the inner store's `operation`, and returns what it
    /// returned (or what the hook decides instead). `work` does nothing
    /// until awaited, so a hook that does not await it keeps the operation
    /// from happening at all.
    fn around<T: Send>(
        &self,
        operation: Operation,
        work: impl Future<Output = Result<T, StoreError>> + Send,
    ) -> impl Future<Output = Result<T, StoreError>> + Send;
}

/// `inner` behind `hook`: every store trait, each operation passed through
/// [`StoreHook::around`]. The store's properties ([`Presence::sharing`],
/// [`RunEventLog::run_events_signal`]) are not operations and go straight
/// through.
pub struct Layered<H> {
    inner: Arc<dyn Store>,
    hook: H,
}

impl<H: StoreHook> Layered<H> {
    pub fn new(inner: Arc<dyn Store>, hook: H) -> Self {
        Self { inner, hook }
    }

    pub fn hook(&self) -> &H {
        &self.hook
    }
}

use Operation as Op;

#[async_trait]
impl<H: StoreHook> RunStore for Layered<H> {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        let work = self.inner.create_run(run, events);
        self.hook.around(Op::write("create_run"), work).await
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.hook
            .around(Op::read("load_run"), self.inner.load_run(id))
            .await
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError> {
        let work = self.inner.commit(run, expected_version, events);
        self.hook.around(Op::write("commit"), work).await
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
        self.hook.around(Op::write("append_events"), work).await
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        let work = self.inner.read_events(id, after_seq);
        self.hook.around(Op::read("read_events"), work).await
    }

    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError> {
        let work = self.inner.find_run_by_request_id(tenant, request_id);
        self.hook.around(Op::read("find_run_by_request_id"), work).await
    }
}

#[async_trait]
impl<H: StoreHook> RunQueries for Layered<H> {
    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        self.hook
            .around(Op::read("list_runs"), self.inner.list_runs(query))
            .await
    }

    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError> {
        self.hook
            .around(Op::read("count_runs"), self.inner.count_runs(query))
            .await
    }

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        let work = self.inner.count_runs_by_agent(status);
        self.hook.around(Op::read("count_runs_by_agent"), work).await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        let work = self.inner.due_suspensions(now, limit);
        self.hook.around(Op::read("due_suspensions"), work).await
    }

    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError> {
        let work = self.inner.orphaned_runs(now, limit);
        self.hook.around(Op::read("orphaned_runs"), work).await
    }
}

#[async_trait]
impl<H: StoreHook> ThreadStore for Layered<H> {
    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError> {
        let work = self.inner.load_thread(tenant, id);
        self.hook.around(Op::read("load_thread"), work).await
    }

    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError> {
        let work = self.inner.thread_runs(tenant, id);
        self.hook.around(Op::read("thread_runs"), work).await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
        let work = self.inner.list_threads(query);
        self.hook.around(Op::read("list_threads"), work).await
    }

    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError> {
        let work = self.inner.delete_thread(tenant, id);
        self.hook.around(Op::write("delete_thread"), work).await
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        let work = self.inner.idle_threads(cutoff, limit);
        self.hook.around(Op::read("idle_threads"), work).await
    }
}

#[async_trait]
impl<H: StoreHook> RunEventLog for Layered<H> {
    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError> {
        let work = self.inner.read_run_events(tenant, after, limit);
        self.hook.around(Op::read("read_run_events"), work).await
    }

    async fn run_events_head(&self) -> Result<EventPosition, StoreError> {
        let work = self.inner.run_events_head();
        self.hook.around(Op::read("run_events_head"), work).await
    }

    fn run_events_signal(&self) -> tokio::sync::watch::Receiver<()> {
        self.inner.run_events_signal()
    }
}

#[async_trait]
impl<H: StoreHook> DeliveryLedger for Layered<H> {
    /// A write: a ledger seen for the first time stores its cursor.
    async fn ledger_cursor(&self, ledger: &str, start: EventPosition) -> Result<EventPosition, StoreError> {
        let work = self.inner.ledger_cursor(ledger, start);
        self.hook.around(Op::write("ledger_cursor"), work).await
    }

    async fn enqueue_deliveries(
        &self,
        ledger: &str,
        from: EventPosition,
        to: EventPosition,
        deliveries: &[NewDelivery],
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let work = self.inner.enqueue_deliveries(ledger, from, to, deliveries, now);
        self.hook.around(Op::write("enqueue_deliveries"), work).await
    }

    async fn claim_deliveries(
        &self,
        ledger: &str,
        owner: &str,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    ) -> Result<DeliveryClaim, StoreError> {
        let work = self
            .inner
            .claim_deliveries(ledger, owner, now, lease_until, limit);
        self.hook.around(Op::write("claim_deliveries"), work).await
    }

    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let work = self.inner.finish_delivery(id, attempt, outcome, now);
        self.hook.around(Op::write("finish_delivery"), work).await
    }

    async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let work = self.inner.pending_deliveries();
        self.hook.around(Op::read("pending_deliveries"), work).await
    }
}

#[async_trait]
impl<H: StoreHook> PushConfigStore for Layered<H> {
    async fn put_push_config(&self, config: &PushConfig) -> Result<(), StoreError> {
        let work = self.inner.put_push_config(config);
        self.hook.around(Op::write("put_push_config"), work).await
    }

    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError> {
        let work = self.inner.push_configs(run_ids);
        self.hook.around(Op::read("push_configs"), work).await
    }

    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError> {
        let work = self.inner.delete_push_config(run_id, id);
        self.hook.around(Op::write("delete_push_config"), work).await
    }
}

#[async_trait]
impl<H: StoreHook> Presence for Layered<H> {
    fn sharing(&self) -> Sharing {
        self.inner.sharing()
    }

    async fn register_replica(&self, replica_id: &str) -> Result<(), StoreError> {
        let work = self.inner.register_replica(replica_id);
        self.hook.around(Op::read("register_replica"), work).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.hook.around(Op::read("ping"), self.inner.ping()).await
    }
}
