//! An in-memory run store for tests and embedding. Same contract as the
//! durable backends; nothing survives the process.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{RunStore, StoreError};
use crate::chunk::Event;
use crate::run::{RunId, RunRecord};

#[derive(Default)]
pub struct MemoryStore {
    runs: Mutex<HashMap<RunId, (RunRecord, Vec<Event>)>>,
}

impl MemoryStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, (RunRecord, Vec<Event>)>> {
        // A panic while holding the lock cannot leave a half-written entry:
        // every write below is a single assignment or push.
        self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        let mut runs = self.lock();
        if runs.contains_key(&run.id) {
            return Err(StoreError::AlreadyExists);
        }
        runs.insert(run.id, (run.clone(), events.to_vec()));
        Ok(())
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError> {
        let mut runs = self.lock();
        let (stored, log) = runs.get_mut(&run.id).ok_or(StoreError::NotFound)?;
        if stored.version != expected_version {
            return Err(StoreError::VersionConflict {
                expected: expected_version,
                actual: stored.version,
            });
        }
        *stored = run.clone();
        log.extend_from_slice(events);
        Ok(())
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.lock()
            .get(&id)
            .map(|(run, _)| run.clone())
            .ok_or(StoreError::NotFound)
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        let runs = self.lock();
        let (_, log) = runs.get(&id).ok_or(StoreError::NotFound)?;
        Ok(log.iter().filter(|e| e.seq > after_seq).cloned().collect())
    }
}
