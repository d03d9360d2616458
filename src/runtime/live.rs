//! The live side of runs in this process: for each run that executes here or
//! that somebody waits on, the chunks released but not yet stored, a
//! broadcast of every chunk as it is released, and the run's cancel signal.
//! Subscribers join under the same lock that releases chunks, so that the
//! store, the unstored snapshot and the broadcast together miss nothing.
//! Holds no run state of its own: the store stays the truth.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{broadcast, watch};

use crate::chunk::Event;
use crate::run::RunId;

/// Chunks a subscriber may fall behind by before it rejoins from the store.
const BROADCAST_CAPACITY: usize = 1024;

/// What a live run tells its subscribers.
#[derive(Clone, Debug)]
pub(crate) enum Signal {
    /// A chunk was released to clients.
    Chunk(Event),
    /// The run was closed without a chunk (it expired): stop waiting.
    Closed,
}

/// The live runs of this process.
#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<RunId, Arc<LiveRun>>>,
}

pub(crate) struct LiveRun {
    id: RunId,
    buffer: Mutex<Buffer>,
    signals: broadcast::Sender<Signal>,
    /// `Some(reason)` once cancellation is requested.
    cancel: watch::Sender<Option<String>>,
    executing: watch::Sender<bool>,
}

/// Events of the current execution since its last commit.
#[derive(Default)]
pub(crate) struct Buffer {
    pub(crate) events: Vec<Event>,
    /// `events[..released]` were sent to clients; the rest are held back.
    pub(crate) released: usize,
}

/// What a subscriber gets when it joins.
pub(crate) struct Joined {
    /// Chunks released but not yet stored, in order.
    pub(crate) unstored: Vec<Event>,
    pub(crate) signals: broadcast::Receiver<Signal>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section below leaves the data consistent at each step,
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
        run.executing.send_replace(true);
        Arc::clone(run)
    }

    /// The live entry of a run, if it has one.
    pub(crate) fn get(&self, id: RunId) -> Option<Arc<LiveRun>> {
        lock(&self.runs).get(&id).cloned()
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
            buffer: Mutex::new(Buffer::default()),
            signals: broadcast::channel(BROADCAST_CAPACITY).0,
            cancel: watch::channel(None).0,
            executing: watch::channel(false).0,
        }
    }

    pub(crate) fn id(&self) -> RunId {
        self.id
    }

    /// Locks the buffer; what is released while it is held is broadcast in
    /// the same critical section (see [`LiveRun::broadcast`]).
    pub(crate) fn buffer(&self) -> MutexGuard<'_, Buffer> {
        lock(&self.buffer)
    }

    /// Tells subscribers; call with the buffer locked, so joins and releases
    /// are ordered.
    pub(crate) fn broadcast(&self, _buffer: &Buffer, signal: Signal) {
        if self.signals.receiver_count() > 0 {
            // Nobody listening is not an error.
            let _ = self.signals.send(signal);
        }
    }

    /// Joins as a subscriber: the released-but-unstored chunks, and every
    /// chunk released from now on.
    pub(crate) fn join(&self) -> Joined {
        let buffer = self.buffer();
        Joined {
            unstored: buffer.events[..buffer.released].to_vec(),
            signals: self.signals.subscribe(),
        }
    }

    /// Tells waiting subscribers the run closed without a chunk.
    pub(crate) fn close(&self) {
        let buffer = self.buffer();
        self.broadcast(&buffer, Signal::Closed);
    }

    /// The execution here ended: nothing is buffered or cancellable now.
    pub(crate) fn stop_executing(&self) {
        *self.buffer() = Buffer::default();
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
}
