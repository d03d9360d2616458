//! The records of the runs this process suspended lately, so that a Resume
//! of one needn't read it back from the store. A record here is exactly
//! what its suspension's commit stored, at that version, and a Resume
//! claims it with a compare-and-set on that version: a record the store
//! has moved past (answered on another replica, cancelled, expired) only
//! makes that claim fail, and the Resume is then made again from the store
//! (see `lifecycle/resume.rs`). So nothing here is ever written on trust.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::domain::{RunId, RunRecord};

/// Records kept at most, the latest: enough for every suspension a busy
/// replica's clients answer at once, a few megabytes at most.
const KEPT: usize = 512;

#[derive(Default)]
pub(in crate::runtime) struct RecentSuspensions {
    recent: Mutex<Recent>,
}

#[derive(Default)]
struct Recent {
    runs: HashMap<RunId, RunRecord>,
    /// The ids kept, oldest first (and some taken since).
    order: VecDeque<RunId>,
}

impl RecentSuspensions {
    /// Keeps `run`, as its suspension's commit just stored it.
    pub(super) fn keep(&self, run: &RunRecord) {
        let mut recent = self.lock();
        if recent.runs.insert(run.id, run.clone()).is_none() {
            recent.order.push_back(run.id);
        }
        while recent.runs.len() > KEPT {
            let Some(oldest) = recent.order.pop_front() else {
                break;
            };
            recent.runs.remove(&oldest);
        }
        if recent.order.len() > 2 * KEPT {
            let Recent { runs, order } = &mut *recent;
            order.retain(|id| runs.contains_key(id));
        }
    }

    /// The record of run `id`'s last suspension here, if kept: taken, so
    /// that one Resume at most starts from it.
    pub(in crate::runtime) fn take(&self, id: RunId) -> Option<RunRecord> {
        self.lock().runs.remove(&id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recent> {
        // Every critical section leaves the map and the order consistent.
        self.recent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
