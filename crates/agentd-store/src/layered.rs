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
    AttemptOutcome, Claim, DeliveryClaim, DeliveryId, DeliveryLedger, Enqueue, GrantStore, Orphan, Presence,
    PushConfig, PushConfigStore, RunEventLog, RunEventPage, RunQueries, RunQuery, RunStore, Sharing, Store,
    StoreError, ThreadStore,
};
use agentd_domain::{
    Event, EventPosition, Grant, RunEventKind, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery,
    ThreadRecord, Timestamp,
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

/// Forwards a store trait's operations through the hook, one line each:
/// whether it writes, its name, its parameters, and what it returns in its
/// `Result<_, StoreError>`. Anything else the impl needs (a property of the
/// store, which is no operation) follows in braces.
macro_rules! forward {
    ($trait:ident { $($access:ident $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)* } $({ $($extra:tt)* })?) => {
        #[async_trait]
        impl<H: StoreHook> $trait for Layered<H> {
            $(
                async fn $name(&self, $($arg: $ty),*) -> Result<$ret, StoreError> {
                    let work = self.inner.$name($($arg),*);
                    self.hook.around(Operation::$access(stringify!($name)), work).await
                }
            )*
            $($($extra)*)?
        }
    };
}

forward!(RunStore {
    write create_run(run: &RunRecord, events: &[Event]) -> ();
    read load_run(id: RunId) -> RunRecord;
    write commit(
        run: &RunRecord, expected_version: u64, events: &[Event], run_events: &[RunEventKind]
    ) -> ();
    write append_events(
        id: RunId, expected_version: u64, lease_expires_at: Option<Timestamp>, events: &[Event]
    ) -> ();
    read read_events(id: RunId, after_seq: u64) -> Vec<Event>;
    read find_run_by_request_id(tenant: &Tenant, request_id: &str) -> Option<RunId>;
});

forward!(RunQueries {
    read list_runs(query: &RunQuery) -> Vec<RunRecord>;
    read count_runs(query: &RunQuery) -> u64;
    read count_runs_by_agent(status: RunStatus) -> BTreeMap<String, u64>;
    read due_suspensions(now: Timestamp, limit: usize) -> Vec<RunId>;
    read orphaned_runs(now: Timestamp, limit: usize) -> Vec<Orphan>;
});

forward!(ThreadStore {
    read load_thread(tenant: &Tenant, id: &ThreadId) -> ThreadRecord;
    read thread_runs(tenant: &Tenant, id: &ThreadId) -> Vec<RunRecord>;
    read list_threads(query: &ThreadQuery) -> Vec<ThreadRecord>;
    write delete_thread(tenant: &Tenant, id: &ThreadId) -> ();
    read idle_threads(cutoff: Timestamp, limit: usize) -> Vec<(Tenant, ThreadId)>;
});

forward!(RunEventLog {
    read read_run_events(tenant: Option<&Tenant>, after: EventPosition, limit: usize) -> RunEventPage;
    read run_events_head() -> EventPosition;
} {
    fn run_events_signal(&self) -> tokio::sync::watch::Receiver<()> {
        self.inner.run_events_signal()
    }
});

// A ledger seen for the first time stores its cursor: a write.
forward!(DeliveryLedger {
    write ledger_cursor(ledger: &str, start: EventPosition) -> EventPosition;
    write enqueue_deliveries(ledger: &str, enqueue: &Enqueue<'_>) -> bool;
    write claim_deliveries(ledger: &str, claim: &Claim<'_>) -> DeliveryClaim;
    write finish_delivery(id: DeliveryId, attempt: u32, outcome: &AttemptOutcome, now: Timestamp) -> bool;
    read pending_deliveries() -> BTreeMap<String, u64>;
});

forward!(PushConfigStore {
    write put_push_config(config: &PushConfig) -> ();
    read push_configs(run_ids: &[RunId]) -> Vec<PushConfig>;
    write delete_push_config(run_id: RunId, id: &str) -> bool;
});

forward!(GrantStore {
    write put_grant(grant: &Grant) -> ();
    read grants(tenant: &Tenant, run: Option<RunId>, thread: Option<&ThreadId>) -> Vec<Grant>;
    write delete_grant(tenant: &Tenant, id: &str) -> bool;
});

// The probe and a registration change no run: reads, for the fence.
forward!(Presence {
    read register_replica(replica_id: &str) -> ();
    read ping() -> ();
} {
    fn sharing(&self) -> Sharing {
        self.inner.sharing()
    }
});
