//! Crash recovery: runs left RUNNING by a replica that died. Every replica
//! looks, every `LeaseSettings::recovery_interval`, for running runs whose
//! lease expired, and takes each over with a version compare-and-set (so
//! exactly one replica does): the takeover commit stores a fresh
//! `start{resumed: true}` right after the run's last stored chunk, with this
//! replica's lease, and the run continues from its last committed step.
//! With a store that one process owns (SQLite), every running run found at
//! startup is an orphan and is taken over at once.
//!
//! What runs again: the step that was in progress at the crash (its model
//! call and the tools it called), and an approved call claimed by a Resume
//! whose execution had not committed. Its chunks that were stored before
//! the crash stay in the log, followed by the new `start` and the step's new
//! attempt. An answer that Resume acknowledged is never lost (it is stored
//! with the claim), nor a suspension a client saw (it is stored before it
//! is sent).

use tokio::task::JoinHandle;

use crate::domain::{Chunk, RunFailure, RunId, RunStatus, Timestamp};
use crate::runtime::execution::{approved_unexecuted, lease_expired, Staging, Work};
use crate::runtime::periodic::spawn_periodic;
use crate::runtime::{Runtime, RuntimeError};
use crate::store::StoreError;

/// Orphaned runs read from the store at a time.
const BATCH: usize = 100;

impl Runtime {
    /// Takes over every running run that no process can be executing: with
    /// a store that only this process uses, every one of them (call it
    /// before serving); with a shared store, none (leases decide). Returns
    /// how many runs this replica took over.
    pub async fn recover_at_startup(&self) -> Result<usize, RuntimeError> {
        if self.inner.store.sharing().is_shared() {
            return Ok(0);
        }
        self.recover(Timestamp(i64::MAX)).await
    }

    /// Starts the task that takes over runs whose lease expired, every
    /// `LeaseSettings::recovery_interval` (zero disables it). The task ends
    /// once every handle of this runtime is dropped.
    pub fn spawn_recovery(&self) -> JoinHandle<()> {
        let interval = self.inner.config.lease.recovery_interval;
        spawn_periodic(&self.inner, interval, |runtime| async move {
            if let Err(error) = runtime.recover(Timestamp::now()).await {
                tracing::warn!(%error, "recovery failed; retrying at the next tick");
            }
        })
    }

    /// Takes over the running runs whose lease expired at `now`.
    pub async fn recover(&self, now: Timestamp) -> Result<usize, RuntimeError> {
        let orphans = self.inner.store.expired_leases(now, BATCH).await?;
        let mut taken = 0;
        for id in orphans {
            match self.take_over(id, now).await {
                Ok(true) => taken += 1,
                Ok(false) => {}
                Err(error) => tracing::warn!(run_id = %id, %error, "could not take the run over"),
            }
        }
        Ok(taken)
    }

    /// Takes one run over, if it is still orphaned; whether this replica
    /// now executes it.
    async fn take_over(&self, id: RunId, now: Timestamp) -> Result<bool, RuntimeError> {
        let executing_here = self.inner.live.get(id).is_some_and(|live| live.is_executing());
        if executing_here {
            return Ok(false);
        }
        let mut run = self.inner.store.load_run(id).await?;
        if run.status() != RunStatus::Running || !lease_expired(&run, now) {
            return Ok(false);
        }
        let agent = self.inner.agent_for_run(&run);
        let mut first = Staging::after(run.last_seq);
        first.push(Chunk::Start {
            agent_id: run.agent_id.clone(),
            resumed: true,
        });
        let expected = run.version;
        run.version += 1;
        run.updated_at = Timestamp::now();
        let agent = match agent {
            Ok(agent) => agent,
            Err(error) => {
                // Nothing here can continue it: end it, so that nobody
                // tries forever.
                let failure = RunFailure {
                    code: "agent_gone".into(),
                    message: error.to_string(),
                };
                first.extend(run.fail(failure, Timestamp::now()));
                run.last_seq = first.last_seq;
                return self.commit_takeover(&run, expected, &first).await;
            }
        };
        run.take_over(self.inner.new_lease());
        run.last_seq = first.last_seq;
        if !self.commit_takeover(&run, expected, &first).await? {
            return Ok(false);
        }
        let approved = approved_unexecuted(&run);
        let work = if approved.is_empty() && run.pending().is_empty() {
            Work::Steps
        } else {
            Work::Continue(approved)
        };
        self.execute_detached(agent, run, first.events, work);
        Ok(true)
    }

    async fn commit_takeover(
        &self,
        run: &crate::domain::RunRecord,
        expected: u64,
        first: &Staging,
    ) -> Result<bool, RuntimeError> {
        match self.inner.store.commit(run, expected, &first.events).await {
            Ok(()) => {
                tracing::info!(run_id = %run.id, last_seq = run.last_seq, "took over a run whose lease expired");
                if let Some(live) = self.inner.live.get(run.id) {
                    if run.status() != RunStatus::Running {
                        live.release_stored(first.events.as_slice());
                    }
                }
                Ok(true)
            }
            // Another replica took it first, or its holder renewed in time.
            Err(StoreError::VersionConflict { .. }) => Ok(false),
            Err(other) => Err(other.into()),
        }
    }
}
