//! The run store: where runs, their state and their event logs live, and
//! the ledger of the webhook deliveries made from their run events. One
//! documented trait, several backends: SQLite (the embedded default),
//! PostgreSQL (several replicas sharing one store) and memory (tests,
//! embedding). Backends never interpret run state; they keep
//! it, guard writes with a version compare-and-set, and return it.

mod deliveries;
mod encoding;
mod feed;
mod memory;
mod orphan;
mod postgres;
mod push_configs;
mod query;
mod record;
mod sqlite;

use std::collections::BTreeMap;

use async_trait::async_trait;

pub use deliveries::{AttemptOutcome, ClaimedDelivery, DeliveryClaim, DeliveryId, NewDelivery};
pub use feed::{FeedItem, FeedMessage, RunFeed, Sharing};
pub use memory::MemoryStore;
pub use orphan::{Holder, Orphan};
pub use postgres::{PostgresStore, POOL_SIZE as POSTGRES_POOL_SIZE};
pub use push_configs::PushConfig;
pub use query::RunQuery;
pub use sqlite::{SqliteStore, Synchronous};

use crate::domain::{
    Event, EventPosition, RunEvent, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery, ThreadRecord,
    Timestamp,
};

/// A read of the run events (see [`RunStore::read_run_events`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunEventPage {
    /// In position order.
    pub events: Vec<RunEvent>,
    /// Events after these are stored already but cannot be read in order
    /// yet (a shared store whose concurrent writes are still committing):
    /// read again shortly, whether or not the signal changes.
    pub settling: bool,
}

/// A store operation that failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run not found")]
    NotFound,
    #[error("run already exists")]
    AlreadyExists,
    /// A run of a thread was to follow a latest run that is no longer the
    /// thread's latest (or the thread appeared, or went, meanwhile).
    #[error("the thread's latest run changed concurrently")]
    ThreadMoved,
    /// Somebody else wrote the run since it was read.
    #[error("run changed concurrently (expected version {expected}, found {actual})")]
    VersionConflict { expected: u64, actual: u64 },
    #[error("store unavailable: {0}")]
    Backend(String),
    /// The store's disk (or its database's quota) is full: nothing can be
    /// written until space is freed.
    #[error("store full: {0}")]
    Full(String),
    /// The store belongs to another process (an embedded store that one
    /// server at a time may open).
    #[error("store in use: {0}")]
    InUse(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// A stored value that does not read back (a backend's decoding failed).
pub(crate) fn corrupt(error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(error.to_string())
}

/// Durable storage of runs and their event logs.
///
/// Every write is atomic: the run record and the events that come with it
/// are stored together or not at all.
///
/// A write that changes a run's stored status (or creates the run) also
/// stores its run event ([`RunEvent`], kind from
/// [`crate::domain::RunEventKind::of_change`]) in the same atomic write,
/// at a position after every event a read has returned: the feed that
/// `WatchRuns` and webhooks follow. A run's events go with it
/// (`delete_thread`).
///
/// The runtime reaches every backend through one layer of its own
/// (`runtime/store_layer.rs`: the shutdown fence, the timing of each
/// operation, refused writes told to the health watch), which implements
/// each method by calling the backend's. The trait has no default bodies:
/// every backend and that layer implement every method, so that a method
/// added here is a compile error until each has it, never a silent fallback.
#[async_trait]
pub trait RunStore: Send + Sync + 'static {
    /// Stores a new run with its first events. `AlreadyExists` if the id is
    /// taken, or if another run of the same tenant has the same
    /// `request_id` (idempotency key).
    ///
    /// A run of a thread (`run.thread` set) also becomes the thread's latest
    /// run in the same atomic write, a compare-and-set on the thread: only
    /// if the thread's latest run is still `run.thread.previous`, or, when
    /// that is `None`, if the tenant has no thread with that id yet (the
    /// thread is then created, `created_at` and `updated_at` the run's
    /// `created_at`). `ThreadMoved` otherwise, and nothing is stored.
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError>;

    /// Reads `tenant`'s thread `id`, with its latest run's status;
    /// `NotFound` without it (another tenant's thread of the same id is a
    /// different thread).
    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError>;

    /// Every run of `tenant`'s thread `id`, by id ascending (empty without
    /// the thread). Their `thread.previous` links give the thread's order.
    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError>;

    /// A page of threads (see [`ThreadQuery`]), with their latest runs'
    /// status.
    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError>;

    /// Deletes `tenant`'s thread `id` with its runs, their events and
    /// their webhook deliveries, all or nothing; `NotFound` without the
    /// thread.
    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError>;

    /// Threads idle since before `cutoff`: the thread and its latest run
    /// last changed before it, and that run is not running. Least recently
    /// changed first, at most `limit` of them.
    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError>;

    /// Replaces a run's record and appends `events` to its log, if the stored
    /// version is still `expected_version` (`run.version` is the new one).
    /// `VersionConflict` otherwise, `NotFound` if there is no such run.
    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError>;

    /// Reads a run.
    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError>;

    /// Reads a run's events with `seq > after_seq`, in order.
    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError>;

    /// The run `tenant` started with this `request_id` (idempotency key),
    /// if any; keys are scoped per tenant.
    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError>;

    /// Runs that pass `query`'s filters, newest first (by id, descending),
    /// at most `query.limit` of them, all older than `query.before`.
    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError>;

    /// How many runs pass `query`'s filters, on every page: `before` and
    /// `limit` are left out. A count query, never a read of the runs.
    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError>;

    /// Suspended runs whose `expires_at` is at or before `now`, soonest
    /// expired first, at most `limit` of them. The caller expires each one
    /// with a version compare-and-set.
    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError>;

    /// How many runs are in `status` now, by agent (agents with none are
    /// left out). The suspended-runs gauge reads it at every scrape: a
    /// durable backend counts from an index on status, never paging
    /// through the runs.
    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError>;

    /// A cheap round trip that fails while the store cannot be reached or
    /// refuses writes (a full disk, a read-only database); the server's
    /// health check calls it periodically. A durable backend writes a row
    /// of its own for it, since a read alone still answers on a full disk.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Extends a running run without rewriting its state: appends `events`
    /// (seqs after the stored `last_seq`), moves `last_seq` to the last of
    /// them (unchanged when there are none), sets the lease's expiry to
    /// `lease_expires_at`, and bumps the version to `expected_version + 1`;
    /// only if the stored version is still `expected_version`
    /// (`VersionConflict` otherwise, `NotFound` without the run). Atomic
    /// like [`RunStore::commit`]. With no events it renews the lease. A read
    /// after it sees the new version, `last_seq` and lease expiry, with the
    /// state of the last commit.
    async fn append_events(
        &self,
        id: RunId,
        expected_version: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError>;

    /// Running runs that nobody may be executing any more: those whose
    /// lease expired at or before `now` (or that have no lease), and, on a
    /// store that knows which replicas live (see
    /// [`RunStore::register_replica`]), those whose holder is gone whatever
    /// their lease says. Leaseless ones first, then by lease expiry, at most
    /// `limit` of them. The caller takes each over with a version
    /// compare-and-set.
    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError>;

    /// Tells the store that this process executes runs as the lease owner
    /// `replica_id` for as long as it lives, so that the other replicas
    /// sharing the store see at once when it is gone (PostgreSQL: a
    /// session lock that ends with the process's connection). `InUse` if a
    /// live process registered the same id; calling it again with the same
    /// id changes nothing. The running runs leased to `replica_id` when it
    /// registers were left by an earlier process under that id, which is
    /// gone: the store then counts them as orphans at once, whatever their
    /// leases say. A store that one process owns has nothing to do.
    async fn register_replica(&self, replica_id: &str) -> Result<(), StoreError>;

    /// Whether several servers share this store, fixed for its life.
    /// [`Sharing::Owned`]: every change happens in this process, so the
    /// runs left running at startup are its own to take over, and its live
    /// runs carry every chunk to its subscribers. [`Sharing::Shared`]: the
    /// store's feed carries, as they happen, the changes the other servers
    /// make, and leases decide who executes a run.
    fn sharing(&self) -> Sharing;

    /// The run events after position `after` (`EventPosition::default()`:
    /// from the first), in position order, at most `limit` of them:
    /// `tenant`'s, or every tenant's with `None`. Every reader sees the
    /// events in the same order, and an event appears only once every event
    /// before it can be read too, so that a reader that continues after the
    /// last event it read misses none.
    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError>;

    /// The position of the newest run event a read returns now
    /// (`EventPosition::default()` without any): where following the events
    /// "from now on" starts.
    async fn run_events_head(&self) -> Result<EventPosition, StoreError>;

    /// Marked changed after each write of this process that stored a run
    /// event and, on a shared store, whenever the feed tells of another
    /// server's write or may have missed one: a follower of the events
    /// reads again then.
    fn run_events_signal(&self) -> tokio::sync::watch::Receiver<()>;

    // The webhook delivery ledger (see `deliveries.rs`). A webhook is named
    // by the operator; its deliveries go with their runs (`delete_thread`).

    /// Where `webhook` stands in the run events: the position after which
    /// it has enqueued nothing yet. A webhook the store has not seen
    /// starts at `start` (stored, so that every replica agrees on it).
    async fn webhook_cursor(&self, webhook: &str, start: EventPosition) -> Result<EventPosition, StoreError>;

    /// Moves `webhook`'s cursor from `from` to `to` and stores
    /// `deliveries` (pending, due at `now`, enqueued at `now`), in one
    /// atomic write, if the cursor is still at `from`: `Ok(false)` and
    /// nothing stored otherwise (another replica enqueued them). A webhook
    /// never has two deliveries of one event.
    async fn enqueue_deliveries(
        &self,
        webhook: &str,
        from: EventPosition,
        to: EventPosition,
        deliveries: &[NewDelivery],
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Claims at most `limit` of `webhook`'s pending deliveries that are
    /// due at `now` and held by no unexpired lease, for one attempt each:
    /// their attempt count rises by one and `owner` holds them until
    /// `lease_until`. A delivery waits while an earlier one (by event
    /// position) of its run is pending, so that a run's events arrive in
    /// order. Each delivery is claimed by one caller at a time, across
    /// every replica sharing the store. Soonest due first.
    async fn claim_deliveries(
        &self,
        webhook: &str,
        owner: &str,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    ) -> Result<DeliveryClaim, StoreError>;

    /// Records how attempt `attempt` of delivery `id` ended (at `now`), and
    /// frees its lease, if the delivery is still pending at that attempt:
    /// `Ok(false)` and nothing changed otherwise (a later attempt claimed
    /// it after the lease expired, or it went with its run).
    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// How many deliveries are pending, by webhook (webhooks with none
    /// are left out); counted from an index, for the metrics gauge.
    async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError>;

    // A2A push notification configurations (see `push_configs.rs`); a
    // run's go with it (`delete_thread`).

    /// Stores `config`, replacing the run's configuration of the same id.
    async fn put_push_config(&self, config: &PushConfig) -> Result<(), StoreError>;

    /// The configurations of the runs `run_ids`, by run and id: one read
    /// for all of them (the push ledger asks for a page of events' runs).
    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError>;

    /// Deletes run `run_id`'s configuration `id`: whether there was one.
    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError>;
}

/// Opens the store a URL names: `sqlite://PATH` (or a plain path;
/// `?synchronous=normal` trades power-loss durability for fewer fsyncs, see
/// [`Synchronous`]),
/// `postgres://...` / `postgresql://...` (see [`PostgresStore::open`]; call
/// it inside a Tokio runtime) or `memory:`.
pub fn open(url: &str) -> Result<std::sync::Arc<dyn RunStore>, StoreError> {
    if url == "memory:" || url == "memory://" {
        return Ok(std::sync::Arc::new(MemoryStore::default()));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(std::sync::Arc::new(PostgresStore::open(url)?));
    }
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    if path.contains("://") {
        return Err(StoreError::Backend(format!(
            "unsupported store URL {url:?}: use sqlite://PATH, postgres://... or memory:"
        )));
    }
    let (path, synchronous) = sqlite::parse_location(path)?;
    Ok(std::sync::Arc::new(SqliteStore::open_with(path, synchronous)?))
}
