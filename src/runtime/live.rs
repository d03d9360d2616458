//! The live side of runs in this process: for each run that executes here or
//! that somebody follows here, a broadcast of its chunks as they are stored,
//! its cancel signal, and whether this process still holds it. A chunk is
//! broadcast only after the store has it, so a subscriber that joins the
//! broadcast and then reads the store misses nothing; chunks that other
//! replicas store reach the same broadcast through the store's feed (see
//! `feed.rs`). Holds no run state of its own: the store stays the truth.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{broadcast, watch};

use crate::chunk::Event;
use crate::run::RunId;

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
}

/// The live runs of this process.
#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<RunId, Arc<LiveRun>>>,
}

pub(crate) struct LiveRun {
    id: RunId,
    signals: broadcast::Sender<Signal>,
    /// `Some(reason)` once cancellation is requested.
    cancel: watch::Sender<Option<String>>,
    executing: watch::Sender<bool>,
    /// Set when the execution here lost the run: another writer moved it
    /// (a takeover after the lease expired, or a cancel), or the store kept
    /// refusing its writes.
    fenced: watch::Sender<bool>,
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

    /// Like [`LiveRuns::start_execution`], unless the run already executes
    /// here: then `None`. Checked and marked under one lock, so of racing
    /// callers exactly one gets the run.
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
            if !run.is_executing() && run.signals.receiver_count() == 0 {
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
            signals: broadcast::channel(BROADCAST_CAPACITY).0,
            cancel: watch::channel(None).0,
            executing: watch::channel(false).0,
            fenced: watch::channel(false).0,
        }
    }

    pub(crate) fn id(&self) -> RunId {
        self.id
    }

    fn begin_execution(&self) {
        self.cancel.send_replace(None);
        self.fenced.send_replace(false);
        self.executing.send_replace(true);
    }

    /// Tells subscribers; call only once what it announces is stored.
    pub(crate) fn broadcast(&self, signal: Signal) {
        if self.signals.receiver_count() > 0 {
            // Nobody listening is not an error.
            let _ = self.signals.send(signal);
        }
    }

    /// Tells subscribers of stored events, as one batch.
    pub(crate) fn release_stored(&self, events: impl Into<Arc<[Event]>>) {
        if self.signals.receiver_count() == 0 {
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
        self.signals.subscribe()
    }

    /// Tells waiting subscribers the run closed without a chunk.
    pub(crate) fn close(&self) {
        self.broadcast(Signal::Closed);
    }

    /// The execution here ended.
    pub(crate) fn stop_executing(&self) {
        self.cancel.send_replace(None);
        self.executing.send_replace(false);
    }

    pub(crate) fn is_executing(&self) -> bool {
        *self.executing.borrow()
    }

    /// Waits until no execution of the run is going on here.
    pub(crate) async fn idle(&self) {
        let mut executing = self.executing.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = executing.wait_for(|running| !running).await;
    }

    /// Asks the execution to stop at once.
    pub(crate) fn request_cancel(&self, reason: String) {
        self.cancel.send_replace(Some(reason));
    }

    /// Resolves with the reason once cancellation is requested.
    pub(crate) async fn cancelled(&self) -> String {
        let mut cancel = self.cancel.subscribe();
        loop {
            if let Some(reason) = cancel.borrow_and_update().clone() {
                return reason;
            }
            if cancel.changed().await.is_err() {
                // The sender lives in `self`: it cannot be gone.
                return std::future::pending().await;
            }
        }
    }

    /// The execution here lost the run: it must stop without writing.
    pub(crate) fn fence(&self) {
        self.fenced.send_replace(true);
    }

    pub(crate) fn is_fenced(&self) -> bool {
        *self.fenced.borrow()
    }

    /// Resolves once the execution here has lost the run.
    pub(crate) async fn fenced(&self) {
        let mut fenced = self.fenced.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = fenced.wait_for(|fenced| *fenced).await;
    }
}
