//! DeleteThread, and the retention sweep that deletes threads idle for
//! longer than the configured retention (`[threads] retention`; run by the
//! expiry sweep's task, see `expiry.rs`). A thread is deleted with its runs;
//! a run of it that executes or is followed here is stopped without
//! another write. A tenant only ever deletes its own threads: another
//! tenant's thread is not found.

use std::time::Duration;

use tracing::instrument;

use crate::domain::{RunId, Tenant, ThreadId, Timestamp};
use crate::runtime::reads::{in_thread_order, thread_not_found};
use crate::runtime::{Inner, RuntimeError};

/// Idle threads deleted per sweep at most; the rest wait for the next.
const RETENTION_BATCH: usize = 100;

impl Inner {
    /// Deletes `tenant`'s thread with its runs; returns their ids, oldest
    /// first.
    #[instrument(skip_all, fields(%tenant, %thread_id))]
    pub(in crate::runtime) async fn delete_thread(
        &self,
        tenant: &Tenant,
        thread_id: &ThreadId,
    ) -> Result<Vec<RunId>, RuntimeError> {
        let thread = self
            .store
            .threads
            .load_thread(tenant, thread_id)
            .await
            .map_err(thread_not_found)?;
        let runs = self.store.threads.thread_runs(tenant, thread_id).await?;
        let ids: Vec<RunId> = in_thread_order(runs, thread.latest_run)
            .iter()
            .map(|run| run.id)
            .collect();
        self.store
            .threads
            .delete_thread(tenant, thread_id)
            .await
            .map_err(thread_not_found)?;
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
        let cutoff = Timestamp::now().before(retention);
        let idle = self.store.threads.idle_threads(cutoff, RETENTION_BATCH).await?;
        let mut deleted = 0;
        for (tenant, thread_id) in idle {
            // Checked again just before: a run may have started since.
            let still_idle = match self.store.threads.load_thread(&tenant, &thread_id).await {
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
