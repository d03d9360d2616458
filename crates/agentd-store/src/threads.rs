//! Conversation threads as the store keeps them: a thread row per tenant
//! and thread id, pointing at its latest run (a run of a thread becomes its
//! latest in the write that creates it, see [`super::RunStore::create_run`]).

use async_trait::async_trait;

use super::StoreError;
use agentd_domain::{RunRecord, Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp};

/// Threads: their reads, their deletion with their runs, and the search
/// for idle ones.
#[async_trait]
pub trait ThreadStore: Send + Sync + 'static {
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

    /// Deletes `tenant`'s thread `id` with its runs and what is kept of
    /// them (their chunks, run events, deliveries, push configurations and
    /// grants: `THREAD_CASCADE` below), all or nothing; `NotFound` without
    /// the thread.
    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError>;

    /// Threads idle since before `cutoff`: the thread and its latest run
    /// last changed before it, and that run is not running. Least recently
    /// changed first, at most `limit` of them.
    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError>;
}

/// What a thread delete takes with the thread's runs: the tables whose rows
/// belong to a run (by their `run_id`), deleted before the runs themselves.
/// The SQL backends delete from exactly these (a table added with a
/// `run_id` is added here, or its rows outlive their thread); the memory
/// store keeps the same things in its own maps.
pub(crate) const THREAD_CASCADE: &[&str] = &[
    "event_batches",
    "run_events",
    "webhook_deliveries",
    "a2a_push_configs",
    "grants",
];
