//! Reading threads (GetThread, ListThreads). A tenant only ever sees its
//! own threads: another tenant's thread is not found. Deleting them is the
//! lifecycle's (see `lifecycle/retention.rs`).

use tracing::instrument;

use super::list::effective_page_size;
use super::thread_history::in_thread_order;
use crate::domain::{Grant, RunRecord, Tenant, ThreadCursor, ThreadId, ThreadQuery, ThreadRecord};
use crate::runtime::{Runtime, RuntimeError};
use crate::store::StoreError;

/// A thread with its runs, oldest first, and its grants in force.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadView {
    pub thread: ThreadRecord,
    pub runs: Vec<RunRecord>,
    /// The grants of scope `Thread` in force, oldest first.
    pub grants: Vec<Grant>,
}

/// A request for one page of threads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListThreads {
    /// Threads per page, as for ListRuns (0: 50, at most 500).
    pub page_size: u32,
    /// Where the page starts: the previous page's [`ThreadPage::next`].
    pub after: Option<ThreadCursor>,
}

/// One page of threads, newest first.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadPage {
    pub threads: Vec<ThreadRecord>,
    /// Where the next page starts; `None` on the last.
    pub next: Option<ThreadCursor>,
}

/// The error of a thread lookup: a thread the store does not have (which
/// includes another tenant's) is [`RuntimeError::ThreadNotFound`].
pub(in crate::runtime) fn thread_not_found(error: StoreError) -> RuntimeError {
    match error {
        StoreError::NotFound => RuntimeError::ThreadNotFound,
        other => RuntimeError::Store(other),
    }
}

impl Runtime {
    /// Reads `tenant`'s thread with its runs.
    #[instrument(skip_all, fields(%tenant, %thread_id))]
    pub(in crate::runtime) async fn read_thread(
        &self,
        tenant: &Tenant,
        thread_id: &ThreadId,
    ) -> Result<ThreadView, RuntimeError> {
        let store = &self.inner.store;
        let thread = store
            .threads
            .load_thread(tenant, thread_id)
            .await
            .map_err(thread_not_found)?;
        let runs = store.threads.thread_runs(tenant, thread_id).await?;
        let mut runs = in_thread_order(runs, thread.latest_run);
        if let Some(latest) = runs.last_mut() {
            // A suspended latest run past its time to live reads as expired.
            self.inner.expire_if_due(latest).await?;
        }
        let grants = self.grants_in_force(tenant, None, Some(thread_id)).await?;
        Ok(ThreadView { thread, runs, grants })
    }

    /// Lists one page of `tenant`'s threads.
    #[instrument(skip_all, fields(%tenant))]
    pub(in crate::runtime) async fn list_thread_page(
        &self,
        tenant: &Tenant,
        request: ListThreads,
    ) -> Result<ThreadPage, RuntimeError> {
        let page_size = effective_page_size(request.page_size);
        let query = ThreadQuery {
            tenant: tenant.clone(),
            after: request.after,
            limit: page_size + 1,
        };
        let mut threads = self.inner.store.threads.list_threads(&query).await?;
        let next = if threads.len() > page_size {
            threads.truncate(page_size);
            threads.last().map(|thread| ThreadCursor {
                created_at: thread.created_at,
                id: thread.id.clone(),
            })
        } else {
            None
        };
        Ok(ThreadPage { threads, next })
    }
}
