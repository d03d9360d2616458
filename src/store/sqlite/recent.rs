//! The runs this store suspended lately, as records, so that the Resume that
//! usually follows soon reads its run without a query, a decompression and a
//! parse. The writer thread is the file's only writer (one server per file),
//! and it updates these entries in the same order as it commits: after each
//! batch, before answering its writes. So an entry is never older than the
//! file. A read takes its entry (the write that follows a Resume's read
//! would drop it anyway); whatever is not here is read from the file.
//! Bounded: the oldest entries go first, so that a million suspended runs
//! cost no more memory than a few.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use crate::domain::{RunId, RunRecord, RunStatus};

/// Records kept at most: enough for the Resumes of a few hundred runs in
/// flight, a megabyte or so.
const CAPACITY: usize = 256;

#[derive(Default)]
pub(super) struct RecentRuns {
    inner: Mutex<Recent>,
}

#[derive(Default)]
struct Recent {
    runs: HashMap<RunId, RunRecord>,
    /// The entries in the order they were added, by id and version (an
    /// entry may have gone, or been replaced by a later version of the run,
    /// before its turn comes: then there is nothing to evict).
    order: VecDeque<(RunId, u64)>,
}

/// What a committed write did to a run, for [`RecentRuns::committed`].
pub(super) enum Change {
    /// The run is stored as this record now.
    Stored(RunId, Option<Box<RunRecord>>),
    /// Runs may have gone (a deleted thread).
    Deleted,
    /// No run changed.
    Nothing,
}

impl Change {
    /// A write of `run`: its record is kept if the run waits for an answer.
    pub(super) fn stored(run: &RunRecord) -> Self {
        let keep = run.status() == RunStatus::Suspended;
        Self::Stored(run.id, keep.then(|| Box::new(run.clone())))
    }
}

impl RecentRuns {
    fn lock(&self) -> MutexGuard<'_, Recent> {
        // Each critical section leaves the maps consistent.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The run's record, if it is here; it leaves.
    pub(super) fn take(&self, id: RunId) -> Option<RunRecord> {
        self.lock().runs.remove(&id)
    }

    /// Brings the entries up to what a committed write stored.
    pub(super) fn committed(&self, change: Change) {
        let mut recent = self.lock();
        match change {
            Change::Stored(id, Some(run)) => {
                recent.order.push_back((id, run.version));
                recent.runs.insert(id, *run);
                if recent.order.len() > CAPACITY {
                    if let Some((oldest, version)) = recent.order.pop_front() {
                        if recent.runs.get(&oldest).is_some_and(|run| run.version == version) {
                            recent.runs.remove(&oldest);
                        }
                    }
                }
            }
            Change::Stored(id, None) => {
                recent.runs.remove(&id);
            }
            Change::Deleted => {
                recent.runs.clear();
                recent.order.clear();
            }
            Change::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Timestamp;
    use crate::domain::{RunOptions, RunState};

    fn suspended_run() -> RunRecord {
        let now = Timestamp::now();
        let (mut run, _) = RunRecord::start(
            RunId::new(),
            Default::default(),
            "assistant".into(),
            RunOptions::default(),
            RunState::default(),
            crate::domain::Lease::vacant(),
            now,
        );
        run.suspend(Vec::new(), now);
        run.version = 2;
        run.last_seq = 5;
        run
    }

    #[test]
    fn keeps_suspended_runs_until_read_or_written_again() {
        let recent = RecentRuns::default();
        let mut run = suspended_run();
        recent.committed(Change::stored(&run));
        assert_eq!(recent.take(run.id).as_ref(), Some(&run));
        assert_eq!(recent.take(run.id), None, "a read takes the entry");

        recent.committed(Change::stored(&run));
        run.take_over(crate::domain::Lease::vacant());
        run.phase = crate::domain::Phase::Running {
            lease: crate::domain::Lease::vacant(),
            pending: Vec::new(),
        };
        recent.committed(Change::stored(&run));
        assert_eq!(recent.take(run.id), None, "a run that moved on is not kept");
    }

    #[test]
    fn holds_at_most_its_capacity_oldest_out_first() {
        let recent = RecentRuns::default();
        let runs: Vec<RunRecord> = (0..CAPACITY + 10).map(|_| suspended_run()).collect();
        for run in &runs {
            recent.committed(Change::stored(run));
        }
        assert_eq!(recent.lock().runs.len(), CAPACITY);
        assert_eq!(recent.take(runs[0].id), None);
        assert!(recent.take(runs[CAPACITY + 9].id).is_some());
    }
}
