//! Expiry: a suspended run past its time to live becomes EXPIRED. Lazily,
//! whenever a request reads it (GetRun, Resume, CancelRun, SubscribeRun, a
//! start on its thread: see `expire_if_due`), and by the expiry sweep, a
//! background task that marks due runs EXPIRED so that listings and
//! watchers learn of it without anybody reading the run first. Both store
//! the expiry with the same version compare-and-set, so every replica may
//! sweep the same store: exactly one writer wins, the others see the
//! conflict and take what it stored. It never touches a run that is not
//! yet due. With a thread retention configured, the same task deletes the
//! threads idle for longer than it (see `retention.rs`).

use tracing::instrument;

use crate::domain::{RunEventKind, RunId, RunRecord, RunStatus, Timestamp};
use crate::runtime::{Inner, RuntimeError};
use crate::store::StoreError;

/// Due runs read from the store at a time.
const SWEEP_BATCH: usize = 100;
/// Batches per sweep at most; whatever is left waits for the next tick, so
/// one sweep cannot spin however many runs are due.
const MAX_BATCHES: usize = 100;

impl Inner {
    /// Expires every suspended run that is due now (up to a bound per call)
    /// and returns how many runs this call found due and now expired.
    #[instrument(skip_all)]
    pub(in crate::runtime) async fn sweep_expired(&self) -> Result<usize, RuntimeError> {
        let mut expired = 0;
        for _ in 0..MAX_BATCHES {
            let due = self.store.due_suspensions(Timestamp::now(), SWEEP_BATCH).await?;
            let more = due.len() == SWEEP_BATCH;
            let mut failed = 0;
            for id in due {
                match self.expire(id).await {
                    Ok(true) => expired += 1,
                    Ok(false) => {}
                    Err(error) => {
                        // One bad run must not hold up the others.
                        tracing::warn!(run_id = %id, %error, "could not expire a due run");
                        failed += 1;
                    }
                }
            }
            // A full batch of failures would come back whole: wait instead.
            if !more || failed == SWEEP_BATCH {
                break;
            }
        }
        if expired > 0 {
            tracing::debug!(expired, "expiry sweep done");
        }
        Ok(expired)
    }

    /// Expires one due run; whether it is expired now. A conflict inside
    /// means a Resume or another replica moved the run first: what they
    /// stored stands.
    async fn expire(&self, id: RunId) -> Result<bool, RuntimeError> {
        let mut run = self.store.load_run(id).await?;
        self.expire_if_due(&mut run).await?;
        Ok(run.status() == RunStatus::Expired)
    }

    /// Marks a suspended run whose time to live has passed as expired (`run`
    /// becomes what the store holds then).
    pub(in crate::runtime) async fn expire_if_due(&self, run: &mut RunRecord) -> Result<(), RuntimeError> {
        if !run.expiry_due(Timestamp::now()) {
            return Ok(());
        }
        // Rare: boxed, so that the future of every caller stays small.
        Box::pin(self.store_expiry(run)).await
    }

    /// Stores a suspended run past its time to live as expired.
    async fn store_expiry(&self, run: &mut RunRecord) -> Result<(), RuntimeError> {
        let suspended_since = run.updated_at;
        let pending = run.pending().to_vec();
        let chunks = run.expire(Timestamp::now())?;
        let staged = run.stage(chunks);
        match self
            .store
            .commit(
                run,
                staged.expected_version,
                &staged.events,
                &RunEventKind::of_write(None, run.status()),
            )
            .await
        {
            Ok(()) => {
                crate::runtime::lifecycle_log::decided(run, run.state.change_decisions());
                crate::runtime::lifecycle_log::expired(run, suspended_since);
                self.config.metrics.run_expired(&run.agent_id, suspended_since);
                self.abandon(run, &pending);
                if let Some(live) = self.live.get(run.id) {
                    live.close();
                }
                Ok(())
            }
            // Somebody else moved it first (a Resume, or another expiry):
            // what they stored is the truth.
            Err(StoreError::VersionConflict { .. }) => {
                *run = self.store.load_run(run.id).await?;
                Ok(())
            }
            Err(other) => Err(other.into()),
        }
    }
}
