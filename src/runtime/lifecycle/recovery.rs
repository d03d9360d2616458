//! Crash recovery: runs left RUNNING by a replica that died. Every replica
//! looks, every `LeaseSettings::recovery_interval`, for running runs whose
//! lease expired or whose holder the store knows to be gone (a replica
//! registers as live at startup: see `Presence::register_replica`), and
//! takes each over with a version compare-and-set (so exactly one replica
//! does). Each takeover is logged and counted with what was known of the
//! previous holder (gone, live but out of its lease, or unknown). The
//! takeover commit stores a fresh
//! `start{resumed: true}` right after the run's last stored chunk, with this
//! replica's lease, and the run continues from its last committed step.
//! With a store that one process owns (SQLite), every running run found at
//! startup is an orphan and is taken over at once.
//!
//! What runs again: the step that was in progress at the crash (its model
//! call and the tools it called), and an approved call claimed by a Resume
//! whose execution had not committed; a call whose tool was going on after
//! an answer (an MCP server's request for input) goes on with it again. Its chunks that were stored before
//! the crash stay in the log, followed by the new `start` and the step's new
//! attempt. An answer that Resume acknowledged is never lost (it is stored
//! with the claim), nor a suspension a client saw (it is stored before it
//! is sent).

use crate::domain::{RunEventKind, RunFailure, RunRecord, RunStatus, Staged, Timestamp};
use crate::runtime::execution::{lease_expired, unfinished_calls, Work};
use crate::runtime::{Runtime, RuntimeError};
use crate::store::{Holder, Orphan, StoreError};

/// Orphaned runs read from the store at a time.
const BATCH: usize = 100;

impl Runtime {
    /// Takes over the running runs orphaned at `now`: their lease expired,
    /// or their holder is gone.
    pub(in crate::runtime) async fn take_over_orphans(&self, now: Timestamp) -> Result<usize, RuntimeError> {
        let orphans = self.inner.store.queries.orphaned_runs(now, BATCH).await?;
        let mut taken = 0;
        for orphan in orphans {
            match self.take_over(&orphan, now).await {
                Ok(true) => taken += 1,
                Ok(false) => {}
                Err(error) => tracing::warn!(run_id = %orphan.id, %error, "could not take the run over"),
            }
        }
        Ok(taken)
    }

    /// Whether `run`, found as `orphan`, is still orphaned at `now`: its
    /// lease expired, or the holder the store saw gone still holds it (not
    /// this process, which lives whatever the store saw of its session).
    fn still_orphaned(&self, run: &RunRecord, orphan: &Orphan, now: Timestamp) -> bool {
        if run.status() != RunStatus::Running {
            return false;
        }
        let holder_gone = match &orphan.holder {
            Holder::Gone { owner } => {
                owner != self.replica_id() && run.lease().is_some_and(|lease| &lease.owner == owner)
            }
            Holder::Live | Holder::Unknown => false,
        };
        holder_gone || lease_expired(run, now)
    }

    /// Takes one run over, if it is still orphaned; whether this replica
    /// now executes it.
    async fn take_over(&self, orphan: &Orphan, now: Timestamp) -> Result<bool, RuntimeError> {
        let id = orphan.id;
        let executing_here = self.inner.live.get(id).is_some_and(|live| live.is_executing());
        if executing_here {
            return Ok(false);
        }
        let mut run = self.inner.store.runs.load_run(id).await?;
        if !self.still_orphaned(&run, orphan, now) {
            return Ok(false);
        }
        let previous = Previous {
            owner: run.lease().map(|lease| lease.owner.clone()).unwrap_or_default(),
            holder: &orphan.holder,
        };
        // Still orphaned, so running: nothing else is taken over.
        let Ok(start) = run.take_over(self.inner.new_lease(), Timestamp::now()) else {
            return Ok(false);
        };
        let agent = match self.inner.agent_for_run(&run) {
            Ok(agent) => agent,
            Err(error) => {
                // Nothing here can continue it: end it, so that nobody
                // tries forever.
                let failure = RunFailure {
                    code: "agent_gone".into(),
                    message: error.to_string(),
                };
                let mut chunks = vec![start];
                chunks.extend(run.fail(failure, Timestamp::now())?);
                let first = run.stage(chunks);
                return self.commit_takeover(&run, &first, &previous).await;
            }
        };
        let first = run.stage([start]);
        if !self.commit_takeover(&run, &first, &previous).await? {
            return Ok(false);
        }
        let unfinished = unfinished_calls(&run);
        let work = if unfinished.is_empty() && run.pending().is_empty() {
            Work::Steps
        } else {
            Work::Continue {
                calls: unfinished,
                grants: Vec::new(),
            }
        };
        let live = self.inner.live.start_execution(run.id);
        self.execute_detached(live, agent, run, first.events, work);
        Ok(true)
    }

    async fn commit_takeover(
        &self,
        run: &RunRecord,
        first: &Staged,
        previous: &Previous<'_>,
    ) -> Result<bool, RuntimeError> {
        match self
            .inner
            .store
            .runs
            .commit(
                run,
                first.expected_version,
                &first.events,
                &RunEventKind::of_write(None, run.status()),
            )
            .await
        {
            Ok(()) => {
                previous.log(run);
                self.metrics().run_taken_over(previous.holder.as_str());
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

/// Who held a run before this replica took it over, for the log and the
/// metrics.
struct Previous<'a> {
    /// The previous lease's owner (empty for a run without a lease).
    owner: String,
    holder: &'a Holder,
}

impl Previous<'_> {
    fn log(&self, run: &RunRecord) {
        let (run_id, last_seq, owner, holder) = (run.id, run.last_seq(), &self.owner, self.holder.as_str());
        match self.holder {
            Holder::Gone { .. } => tracing::info!(
                %run_id, last_seq, previous_owner = %owner, holder,
                "took over a run whose replica is gone"
            ),
            Holder::Live | Holder::Unknown => tracing::info!(
                %run_id, last_seq, previous_owner = %owner, holder,
                "took over a run whose lease expired"
            ),
        }
    }
}
