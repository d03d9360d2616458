//! Runs as the store keeps them: a run's record with its log of chunks
//! ([`RunStore`]), and the reads across runs that listings, sweeps and
//! gauges need ([`RunQueries`]).

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::{Orphan, RunQuery, StoreError};
use agentd_domain::{Event, RunEventKind, RunId, RunRecord, RunStatus, Tenant, Timestamp};

/// A run's record and its log of chunks.
///
/// Every write is atomic: the run record and the events that come with it
/// are stored together or not at all, and so are the run events (see
/// [`super::RunEventLog`]) of a write that creates a run or changes its
/// status.
#[async_trait]
pub trait RunStore: Send + Sync + 'static {
    /// Stores a new run with its first events, in whatever phase it has
    /// reached (a run is first written at its first durable point), and its
    /// run events: `started`, then the status it is in unless running (see
    /// [`RunEventKind::of_write`]). `AlreadyExists` if the id is
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

    /// Reads a run.
    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError>;

    /// Replaces a run's record, appends `events` to its log and stores the
    /// run events `run_events` names, in that order (their statuses and
    /// what the last one records come from `run`: see
    /// [`RunEventKind::of_write`]), if the stored version is still
    /// `expected_version` (`run.version()` is the new one).
    /// `VersionConflict` otherwise, `NotFound` if there is no such run.
    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
        run_events: &[RunEventKind],
    ) -> Result<(), StoreError>;

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

    /// Reads a run's events with `seq > after_seq`, in order.
    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError>;

    /// The run `tenant` started with this `request_id` (idempotency key),
    /// if any; keys are scoped per tenant.
    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError>;
}

/// Reads across runs: listings, the sweeps' searches and the gauges'
/// counts. Each is one indexed query on a durable backend.
#[async_trait]
pub trait RunQueries: Send + Sync + 'static {
    /// Runs that pass `query`'s filters, newest first (by id, descending),
    /// at most `query.limit` of them, all older than `query.before`.
    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError>;

    /// How many runs pass `query`'s filters, on every page: `before` and
    /// `limit` are left out. A count query, never a read of the runs.
    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError>;

    /// How many runs are in `status` now, by agent (agents with none are
    /// left out). The suspended-runs gauge reads it at every scrape: a
    /// durable backend counts from an index on status, never paging
    /// through the runs.
    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError>;

    /// Suspended runs that wake (`RunRecord::wakes_at`: a reminder is due,
    /// or they expire) at or before `now`, soonest first, at most `limit`
    /// of them. The caller reminds or expires each one with a version
    /// compare-and-set.
    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError>;

    /// Running runs that nobody may be executing any more: those whose
    /// lease expired at or before `now` (or that have no lease), and, on a
    /// store that knows which replicas live (see
    /// [`super::Presence::register_replica`]), those whose holder is gone
    /// whatever their lease says. Leaseless ones first, then by lease
    /// expiry, at most `limit` of them. The caller takes each over with a
    /// version compare-and-set.
    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError>;
}
