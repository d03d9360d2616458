//! Reading and deleting threads (GetThread, ListThreads, DeleteThread) and
//! the retention sweep that deletes threads idle for longer than the
//! configured retention. A tenant only ever sees and deletes its own
//! threads: another tenant's thread is not found.

use std::time::Duration;

use tracing::instrument;

use super::list::effective_page_size;
use crate::domain::{RunId, RunRecord, Tenant, ThreadCursor, ThreadId, ThreadQuery, ThreadRecord, Timestamp};
use crate::runtime::lifecycle::in_thread_order;
use crate::runtime::{Inner, Runtime, RuntimeError};
use crate::store::StoreError;

/// Idle threads deleted per sweep at most; the rest wait for the next.
const RETENTION_BATCH: usize = 100;

/// A thread with its runs, oldest first.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadView {
    pub thread: ThreadRecord,
    pub runs: Vec<RunRecord>,
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

fn not_found(error: StoreError) -> RuntimeError {
    match error {
        StoreError::NotFound => RuntimeError::ThreadNotFound,
        other => RuntimeError::Store(other),
    }
}

impl Runtime {
    /// Reads `tenant`'s thread with its runs.
    #[instrument(skip_all, fields(%tenant, %thread_id))]
    pub async fn get_thread(
        &self,
        tenant: &Tenant,
        thread_id: &ThreadId,
    ) -> Result<ThreadView, RuntimeError> {
        let store = &self.inner.store;
        let thread = store.load_thread(tenant, thread_id).await.map_err(not_found)?;
        let runs = store.thread_runs(tenant, thread_id).await?;
        let mut runs = in_thread_order(runs, thread.latest_run);
        if let Some(latest) = runs.last_mut() {
            // A suspended latest run past its time to live reads as expired.
            self.inner.expire_if_due(latest).await?;
        }
        Ok(ThreadView { thread, runs })
    }

    /// Lists one page of `tenant`'s threads.
    #[instrument(skip_all, fields(%tenant))]
    pub async fn list_threads(
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
        let mut threads = self.inner.store.list_threads(&query).await?;
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

    /// Deletes `tenant`'s thread with its runs; returns their ids, oldest
    /// first.
    #[instrument(skip_all, fields(%tenant, %thread_id))]
    pub async fn delete_thread(
        &self,
        tenant: &Tenant,
        thread_id: &ThreadId,
    ) -> Result<Vec<RunId>, RuntimeError> {
        self.inner.delete_thread(tenant, thread_id).await
    }

    /// Deletes the threads idle for longer than `retention` (up to a bound
    /// per call) and returns how many.
    pub async fn sweep_idle_threads(&self, retention: Duration) -> Result<usize, RuntimeError> {
        self.inner.sweep_idle_threads(retention).await
    }
}

impl Inner {
    async fn delete_thread(&self, tenant: &Tenant, thread_id: &ThreadId) -> Result<Vec<RunId>, RuntimeError> {
        let thread = self
            .store
            .load_thread(tenant, thread_id)
            .await
            .map_err(not_found)?;
        let runs = self.store.thread_runs(tenant, thread_id).await?;
        let ids: Vec<RunId> = in_thread_order(runs, thread.latest_run)
            .iter()
            .map(|run| run.id)
            .collect();
        self.store
            .delete_thread(tenant, thread_id)
            .await
            .map_err(not_found)?;
        for id in &ids {
            if let Some(live) = self.live.get(*id) {
                // An execution here stops without writing; followers end.
                live.fence();
                live.close();
            }
        }
        tracing::info!(runs = ids.len(), "thread deleted");
        Ok(ids)
    }

    #[instrument(skip_all)]
    pub(in crate::runtime) async fn sweep_idle_threads(
        &self,
        retention: Duration,
    ) -> Result<usize, RuntimeError> {
        let cutoff = Timestamp(
            Timestamp::now()
                .0
                .saturating_sub(i64::try_from(retention.as_micros()).unwrap_or(i64::MAX)),
        );
        let idle = self.store.idle_threads(cutoff, RETENTION_BATCH).await?;
        let mut deleted = 0;
        for (tenant, thread_id) in idle {
            // Checked again just before: a run may have started since.
            let still_idle = match self.store.load_thread(&tenant, &thread_id).await {
                Ok(thread) => {
                    thread.last_activity() < cutoff
                        && thread
                            .latest
                            .is_none_or(|latest| latest.status != crate::domain::RunStatus::Running)
                }
                Err(_) => false,
            };
            if !still_idle {
                continue;
            }
            match self.delete_thread(&tenant, &thread_id).await {
                Ok(_) => deleted += 1,
                // Deleted meanwhile by someone else.
                Err(RuntimeError::ThreadNotFound) => {}
                Err(error) => {
                    tracing::warn!(%tenant, %thread_id, %error, "could not delete an idle thread");
                }
            }
        }
        if deleted > 0 {
            tracing::info!(deleted, "idle threads deleted (threads.retention)");
        }
        Ok(deleted)
    }
}
