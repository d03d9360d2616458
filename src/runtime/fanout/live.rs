//! The live side of runs in this process: for each run that executes here or
//! that somebody follows here, a broadcast of its chunks as they are stored,
//! its cancel signal, and whether this process still holds it. A chunk is
//! broadcast only after the store has it, so a subscriber that joins the
//! broadcast and then reads the store misses nothing; chunks that other
//! replicas store reach the same broadcast through the store's feed (see
//! `feed.rs`). Holds no run state of its own: the store stays the truth.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::sync::{broadcast, watch};

use super::stream::Refusal;
use crate::domain::{Event, RunId};

/// Batches of stored chunks a subscriber may fall behind by before it
/// rejoins from the store. Each write is one batch, however many chunks it
/// stored, so a fast producer does not make its followers lag.
const BROADCAST_CAPACITY: usize = 16;

/// What a live run tells its subscribers.
#[derive(Clone, Debug)]
pub(crate) enum Signal {
    /// Chunks were stored (by one write, in seq order). Shared, so that
    /// every subscriber receives the batch without copying it.
    Chunks(Arc<[Event]>),
    /// The run was closed without a chunk (it expired): stop waiting.
    Closed,
    /// The run may have changed without a chunk reaching this process (a
    /// feed that reconnected, or a write announced without its events):
    /// read the store.
    Recheck,
    /// The store refused the writes of the run's execution here: streams
    /// following it end (see [`Refusal`]).
    Refused(Arc<Refusal>),
}

/// The live runs of this process.
#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<RunId, Arc<LiveRun>>>,
}

pub(crate) struct LiveRun {
    id: RunId,
    /// Made when the first subscriber joins: most runs have none but
    /// their execution's own client, which is fed from the execution.
    signals: OnceLock<broadcast::Sender<Signal>>,
    execution: watch::Sender<ExecutionState>,
}

/// Where the execution of a live run stands, as one value: one channel
/// for every change of it, and one wait for whatever interrupts a step.
#[derive(Clone, Debug, Default)]
struct ExecutionState {
    executing: bool,
    /// The execution here lost the run: another writer moved it (a
    /// takeover after the lease expired, or a cancel), or the store kept
    /// refusing its writes.
    fenced: bool,
    /// `Some(reason)` once cancellation is requested.
    cancel: Option<String>,
}

/// What cuts an execution's step short.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Interruption {
    /// The execution lost the run: it must stop without writing.
    Fenced,
    /// Cancellation was requested, for this reason.
    Cancelled(String),
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section below leaves the map consistent at each step,
    // so a panic elsewhere cannot leave it half-written.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl LiveRuns {
    /// The live entry of a run, created if absent.
    pub(crate) fn entry(&self, id: RunId) -> Arc<LiveRun> {
        let mut runs = lock(&self.runs);
        Arc::clone(runs.entry(id).or_insert_with(|| Arc::new(LiveRun::new(id))))
    }

    /// The live entry of a run that starts executing here; marked so under
    /// the map's lock, so that no subscriber leaving can drop it meanwhile.
    pub(crate) fn start_execution(&self, id: RunId) -> Arc<LiveRun> {
        let mut runs = lock(&self.runs);
        let run = runs.entry(id).or_insert_with(|| Arc::new(LiveRun::new(id)));
        run.begin_execution();
        Arc::clone(run)
    }

    /// [`LiveRuns::start_execution`], unless the run executes here already
    /// (then `None`, and nothing changes).
    pub(crate) fn try_start_execution(&self, id: RunId) -> Option<Arc<LiveRun>> {
        let mut runs = lock(&self.runs);
        let run = runs.entry(id).or_insert_with(|| Arc::new(LiveRun::new(id)));
        if run.is_executing() {
            return None;
        }
        run.begin_execution();
        Some(Arc::clone(run))
    }

    /// The live entry of a run, if it has one.
    pub(crate) fn get(&self, id: RunId) -> Option<Arc<LiveRun>> {
        lock(&self.runs).get(&id).cloned()
    }

    /// Every live entry.
    pub(crate) fn all(&self) -> Vec<Arc<LiveRun>> {
        lock(&self.runs).values().cloned().collect()
    }

    /// Forgets a run's entry once nothing executes or waits on it.
    pub(crate) fn release(&self, id: RunId) {
        let mut runs = lock(&self.runs);
        if let Some(run) = runs.get(&id) {
            if !run.is_executing() && !run.has_subscribers() {
                runs.remove(&id);
            }
        }
    }

    /// Runs executing in this process.
    pub(crate) fn executing(&self) -> usize {
        lock(&self.runs).values().filter(|run| run.is_executing()).count()
    }
}

impl LiveRun {
    fn new(id: RunId) -> Self {
        Self {
            id,
            signals: OnceLock::new(),
            execution: watch::Sender::new(ExecutionState::default()),
        }
    }

    pub(crate) fn id(&self) -> RunId {
        self.id
    }

    fn begin_execution(&self) {
        self.execution.send_replace(ExecutionState {
            executing: true,
            fenced: false,
            cancel: None,
        });
    }

    fn has_subscribers(&self) -> bool {
        self.signals
            .get()
            .is_some_and(|signals| signals.receiver_count() > 0)
    }

    /// Tells subscribers; call only once what it announces is stored.
    pub(crate) fn broadcast(&self, signal: Signal) {
        if let Some(signals) = self.signals.get() {
            // Nobody listening is not an error.
            let _ = signals.send(signal);
        }
    }

    /// Tells subscribers of stored events, as one batch.
    pub(crate) fn release_stored(&self, events: impl Into<Arc<[Event]>>) {
        if !self.has_subscribers() {
            return;
        }
        let events = events.into();
        if !events.is_empty() {
            self.broadcast(Signal::Chunks(events));
        }
    }

    /// Joins as a subscriber: every signal from now on. Join before reading
    /// the store, and whatever the read misses arrives here.
    pub(crate) fn join(&self) -> broadcast::Receiver<Signal> {
        self.signals
            .get_or_init(|| broadcast::channel(BROADCAST_CAPACITY).0)
            .subscribe()
    }

    /// Tells waiting subscribers the run closed without a chunk.
    pub(crate) fn close(&self) {
        self.broadcast(Signal::Closed);
    }

    /// The execution here ended.
    pub(crate) fn stop_executing(&self) {
        self.execution.send_modify(|state| {
            state.executing = false;
            state.cancel = None;
        });
    }

    pub(crate) fn is_executing(&self) -> bool {
        self.execution.borrow().executing
    }

    /// Waits until no execution of the run is going on here.
    pub(crate) async fn idle(&self) {
        let mut execution = self.execution.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = execution.wait_for(|state| !state.executing).await;
    }

    /// Asks the execution to stop at once.
    pub(crate) fn request_cancel(&self, reason: String) {
        self.execution.send_modify(|state| state.cancel = Some(reason));
    }

    /// The execution here lost the run: it must stop without writing.
    pub(crate) fn fence(&self) {
        self.execution.send_modify(|state| state.fenced = true);
    }

    pub(crate) fn is_fenced(&self) -> bool {
        self.execution.borrow().fenced
    }

    /// Resolves once the execution here is fenced or asked to cancel
    /// (fenced first, when both).
    pub(crate) async fn interrupted(&self) -> Interruption {
        let mut execution = self.execution.subscribe();
        let interrupted = |state: &ExecutionState| state.fenced || state.cancel.is_some();
        // The sender lives in `self`, so the wait cannot fail.
        let cancel = match execution.wait_for(interrupted).await {
            Ok(state) if !state.fenced => state.cancel.clone(),
            _ => None,
        };
        cancel.map_or(Interruption::Fenced, Interruption::Cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_step_is_interrupted_by_a_fence_or_a_cancel_and_a_new_execution_starts_clean() {
        let runs = LiveRuns::default();
        let run = runs.start_execution(RunId::new());
        run.request_cancel("enough".into());
        assert_eq!(run.interrupted().await, Interruption::Cancelled("enough".into()));
        run.fence();
        assert_eq!(
            run.interrupted().await,
            Interruption::Fenced,
            "a fence comes first"
        );

        run.stop_executing();
        assert!(!run.is_executing());
        let again = runs.start_execution(run.id());
        assert!(again.is_executing() && !again.is_fenced());
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(20), again.interrupted());
        assert!(waiting.await.is_err(), "nothing interrupts a new execution");
    }

    #[tokio::test]
    async fn signals_reach_only_those_who_joined_before() {
        let runs = LiveRuns::default();
        let run = runs.entry(RunId::new());
        // Nobody has joined: nothing is kept for later.
        run.broadcast(Signal::Recheck);
        let mut joined = run.join();
        run.close();
        assert!(matches!(joined.recv().await, Ok(Signal::Closed)));
        assert!(joined.try_recv().is_err());
    }
}
