//! CancelRun: a running run is interrupted where it is (an in-flight model
//! call is dropped), by the replica executing it (see `cancel_remote.rs`
//! when that is another one); a suspended run is closed, each pending call recorded as
//! declined because the run was cancelled. Finished runs cannot be
//! cancelled.

use std::time::Duration;

use tracing::instrument;

use crate::domain::{Decider, RunEventKind, RunId, RunRecord, RunStatus, Tenant, Timestamp};
use crate::runtime::{Runtime, RuntimeError};
use crate::store::StoreError;

/// How long CancelRun waits for an interrupted step to store its end.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// Attempts before CancelRun gives up on a run that keeps changing.
const ATTEMPTS: usize = 8;

impl Runtime {
    /// Cancels a running or suspended run of `tenant` and returns it as
    /// stored; another tenant's run is not found.
    #[instrument(skip_all, fields(%tenant, run_id = %run_id))]
    pub(in crate::runtime) async fn cancel_run(
        &self,
        tenant: &Tenant,
        run_id: RunId,
        reason: String,
        decider: &Decider,
    ) -> Result<RunRecord, RuntimeError> {
        let mut interrupted = false;
        for _ in 0..ATTEMPTS {
            let mut run = self.inner.load_run_of(tenant, run_id).await?;
            self.inner.expire_if_due(&mut run).await?;
            let executing_here = self.inner.live.get(run_id).filter(|live| live.is_executing());
            let outcome = match (run.status(), executing_here) {
                (RunStatus::Running, Some(live)) if !interrupted => {
                    live.request_cancel(reason.clone());
                    interrupted = true;
                    if tokio::time::timeout(STOP_WAIT, live.idle()).await.is_err() {
                        tracing::warn!("the run did not stop in time; cancelling it in the store");
                    }
                    continue;
                }
                (RunStatus::Running, None) if !interrupted && self.owner_may_stop(&run) => {
                    interrupted = true;
                    self.ask_owner_to_cancel(&run, &reason).await;
                    continue;
                }
                (RunStatus::Cancelled, _) if interrupted => return Ok(run),
                (RunStatus::Running | RunStatus::Suspended, _) => {
                    self.cancel_stored(run, &reason, decider).await
                }
                (status, _) => return Err(RuntimeError::NotCancellable(status)),
            };
            match outcome {
                Ok(run) => return Ok(run),
                // Changed under us (resumed, or it moved on): look again.
                Err(RuntimeError::Store(StoreError::VersionConflict { .. })) => continue,
                Err(other) => return Err(other),
            }
        }
        Err(RuntimeError::Busy)
    }

    /// Cancels a run nobody executes here, in the store: its pending calls
    /// are answered as declined, and the chunks go to anyone waiting on it.
    async fn cancel_stored(
        &self,
        mut run: RunRecord,
        reason: &str,
        decider: &Decider,
    ) -> Result<RunRecord, RuntimeError> {
        let suspended_since = (run.status() == RunStatus::Suspended).then_some(run.updated_at);
        let pending = run.pending().to_vec();
        // A lease still held belongs to an execution elsewhere that did not
        // stop: the version guard fences it at its next write.
        let chunks = run
            .cancel_by(reason.to_owned(), Some(decider), Timestamp::now())
            .map_err(|wrong| RuntimeError::NotCancellable(wrong.from))?;
        let staged = run.stage(chunks);
        self.inner
            .store
            .runs
            .commit(
                &run,
                staged.expected_version,
                &staged.events,
                &RunEventKind::of_write(None, run.status()),
            )
            .await?;
        crate::runtime::lifecycle_log::decided(&run, run.state.change_decisions());
        crate::runtime::lifecycle_log::finished(&run, crate::domain::FinishReason::Cancelled);
        self.inner.abandon(&run, &pending);
        self.inner
            .config
            .metrics
            .run_cancelled(&run.agent_id, suspended_since);

        if let Some(live) = self.inner.live.get(run.id) {
            live.release_stored(staged.events);
        }
        Ok(run)
    }
}
