//! The emitter numbers a run's chunks and makes each durable before anybody
//! sees it: the output gate. Chunks emitted during a step are appended to
//! the store by a flusher task of the execution, in batches (whatever
//! accumulated while the previous append was in flight goes in the next
//! one), and released once stored: handed to the execution's own client
//! straight from the write (see `fanout/stream.rs`), and broadcast to
//! whoever else follows the run. Chunks that must come with a state change
//! (suspensions, finishes) are held back and stored by the step's commit.
//! So no client ever sees a chunk a crash could lose, and a replica that
//! takes a run over continues its seq right after the last chunk anybody
//! saw.
//!
//! Nothing more is forced to disk than that. A start or a Resume gives its
//! execution a run that is not written yet ([`Begin::Start`],
//! [`Begin::Claim`]): its first write creates the run, or claims the
//! suspension with a compare-and-set on the version it was suspended at,
//! together with every chunk so far and the state the run has reached then.
//! That is the execution's first commit (its suspension or finish, in an
//! ask_user cycle), unless a tool with side effects is about to run or the
//! run is still going after `LeaseSettings::first_write_deadline` (a slow
//! model), which write the run as the start or claim made it, with the
//! chunks so far, so that another replica could take it over. Until then
//! nothing is released, so a first write the store refuses (a request id
//! or a thread taken meanwhile, a claim that lost its race) ends the
//! execution before any client saw anything: its caller gets the refusal
//! (see [`Opening`]). A takeover gives its execution a run it stored
//! already.
//!
//! The flusher also renews the run's lease, with every append and at least
//! every `LeaseSettings::renew_every`. A write refused by the version guard
//! means the run moved on elsewhere (taken over, or cancelled by another
//! replica): the execution is fenced and stops without writing again. A
//! store that keeps refusing appends for a whole lease fences it too, and
//! the refusal is kept for the execution to report (see [`Emitter::refusal`]).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::lease::LeaseSettings;
use super::recent::RecentSuspensions;
use crate::agent::ChunkSink;
use crate::domain::{Chunk, Event, Position, RunEventKind, RunRecord, RunStatus, Timestamp};
use crate::metrics::Metrics;
use crate::runtime::fanout::{ClientFeed, Delivery, LiveRun, Refusal, Signal};
use crate::runtime::{lifecycle_log, RuntimeConfig};
use crate::store::{RunStore, StoreError};
use crate::tenant_slots::TenantSlot as RunSlot;

/// Unstored chunks a step may run ahead of the store by before it waits.
const MAX_UNSTORED: usize = 1024;
/// The pause before retrying an append the store failed.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// How an execution came by a run not written yet, and so what its first
/// write does.
pub(in crate::runtime) enum Begin {
    /// A start: the first write creates the run.
    Start,
    /// A Resume's answers: the first write claims the suspension stored at
    /// `suspended`, waiting since `since`, with a compare-and-set on its
    /// version.
    Claim { suspended: Position, since: Timestamp },
}

/// An execution's opening, when its run is not written yet: how it came
/// by the run, the chunks that open its stream (numbered, not stored), and
/// who is told how its first write went (before any chunk is released).
pub(in crate::runtime) struct Opening {
    pub begin: Begin,
    pub first: Vec<Event>,
    pub told: oneshot::Sender<Result<(), StoreError>>,
}

pub(crate) struct Emitter {
    live: Arc<LiveRun>,
    last_seq: u64,
    client: Option<mpsc::Sender<Delivery>>,
    hold: Hold,
    shared: Arc<Shared>,
}

/// The execution's hold on its run here: the run's executing mark and the
/// tenant's slot it counts against (none for a takeover).
struct Hold {
    held: bool,
    slot: Option<RunSlot>,
}

impl Hold {
    /// Ends the hold, once: after that another execution of the run may
    /// begin here, whose mark must stay.
    fn release(&mut self, live: &LiveRun) {
        if std::mem::take(&mut self.held) {
            live.stop_executing();
            self.slot = None;
        }
    }
}

/// What the emitter and its flusher share.
struct Shared {
    /// The one table the emitter touches: it creates the run, commits its
    /// steps and appends its chunks.
    runs: Arc<dyn RunStore>,
    /// Where a suspension this execution stores is kept for its Resume.
    recent: Arc<RecentSuspensions>,
    live: Arc<LiveRun>,
    lease: LeaseSettings,
    metrics: Metrics,
    unstored: Mutex<Unstored>,
    /// Held while writing, so that appends and commits go one at a time, in
    /// order, each with the version the previous one left.
    writer: tokio::sync::Mutex<Writer>,
    /// The execution's own client, while it is fed from here.
    feed: Mutex<Option<ClientFeed>>,
    /// Wakes the flusher: chunks are waiting.
    wake: Notify,
    /// The flusher task, once there is one: from the start for a run
    /// stored already, otherwise from its first write that leaves it
    /// running, or from its deadline (see [`FirstWriteDue`]); an execution
    /// that suspends or finishes at its first write never spawns one.
    flusher: Mutex<Option<JoinHandle<()>>>,
    /// Wakes emitters waiting for the flusher to catch up.
    drained: Notify,
}

/// Chunks numbered but not yet stored, oldest first.
#[derive(Default)]
struct Unstored {
    events: Vec<Event>,
    /// `events[..flushable]` may be appended now; the rest are held back for
    /// the next commit (and chunks after a held one wait behind it).
    flushable: usize,
    /// Chunks taken out by an append that is being written (they come
    /// before `events`); they count against [`MAX_UNSTORED`] too.
    in_flight: usize,
}

impl Unstored {
    fn len(&self) -> usize {
        self.in_flight + self.events.len()
    }

    /// Returns the chunks of a failed append to the front, flushable again.
    fn put_back(&mut self, batch: Vec<Event>) {
        self.in_flight = 0;
        self.flushable += batch.len();
        self.events.splice(..0, batch);
    }
}

struct Writer {
    /// Where the run stands in the store, as this execution knows it.
    stored: Stored,
    /// When the lease needs renewing at the latest; for a run not written
    /// yet, when it must be.
    renew_at: Instant,
    /// When the last write succeeded (the lease holds until `ttl` after).
    stored_at: Instant,
    /// No more writes: the run left RUNNING, or the execution was fenced.
    stopped: bool,
    /// Why the flusher gave the run up, when the store refused its appends
    /// for a whole lease (rather than another writer moving the run).
    refused: Option<StoreError>,
}

/// Where the run stands in the store, as this execution knows it.
enum Stored {
    /// As this execution last wrote it (or the commit that gave it the run).
    At(Position),
    /// Not written since this execution got it: its first write creates
    /// it or claims its suspension.
    Unwritten(Box<FirstWrite>),
}

/// What an execution's first write does, and who hears of it.
struct FirstWrite {
    begin: Begin,
    /// The run as the start or claim made it: what a write made before the
    /// execution's own first commit (a deadline, a tool with side effects)
    /// stores. Taken by that write.
    snapshot: Option<RunRecord>,
    told: oneshot::Sender<Result<(), StoreError>>,
}

impl FirstWrite {
    /// The first write stored `run`: counted and logged before any client
    /// can see it, then its caller is told.
    fn written(self, run: &RunRecord, metrics: &Metrics) {
        match self.begin {
            Begin::Start => {
                metrics.run_started(&run.agent_id);
                lifecycle_log::started(run);
            }
            Begin::Claim { since, .. } => {
                metrics.run_resumed(&run.agent_id, since);
                lifecycle_log::resumed(run);
            }
        }
        // The caller may have gone (its client left); the run goes on.
        let _ = self.told.send(Ok(()));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each critical section leaves what it guards consistent.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Emitter {
    /// An emitter for an execution of `run`, continuing after its
    /// `last_seq`: stored as it is, with this replica's lease, without an
    /// `opening`; otherwise not written yet, with the opening's chunks
    /// (see [`Opening`]). `feed` is the execution's own client, which gets
    /// the chunks of each write straight from here; other clients follow
    /// the run.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        runs: Arc<dyn RunStore>,
        recent: Arc<RecentSuspensions>,
        live: Arc<LiveRun>,
        run: &RunRecord,
        config: &RuntimeConfig,
        feed: Option<ClientFeed>,
        slot: Option<RunSlot>,
        opening: Option<Opening>,
    ) -> Self {
        let lease = config.lease.clone();
        let now = Instant::now();
        let client = feed.as_ref().map(ClientFeed::client);
        let mut unstored = Unstored::default();
        let written = opening.is_none();
        let (stored, renew_at) = match opening {
            None => (Stored::At(run.position()), now + lease.renew_every),
            Some(Opening { begin, first, told }) => {
                unstored.flushable = first.len();
                unstored.events = first;
                let first_write = FirstWrite {
                    begin,
                    snapshot: Some(run.clone()),
                    told,
                };
                (
                    Stored::Unwritten(Box::new(first_write)),
                    now + lease.first_write_deadline,
                )
            }
        };
        let shared = Arc::new(Shared {
            runs,
            recent,
            live: Arc::clone(&live),
            writer: tokio::sync::Mutex::new(Writer {
                stored,
                renew_at,
                stored_at: now,
                stopped: false,
                refused: None,
            }),
            lease,
            metrics: config.metrics.clone(),
            unstored: Mutex::new(unstored),
            feed: Mutex::new(feed),
            wake: Notify::new(),
            flusher: Mutex::new(None),
            drained: Notify::new(),
        });
        if written {
            shared.ensure_flusher();
        }
        Self {
            live,
            last_seq: run.last_seq(),
            client,
            hold: Hold { held: true, slot },
            shared,
        }
    }

    pub(crate) fn live(&self) -> &Arc<LiveRun> {
        &self.live
    }

    /// Ends the execution's hold on the run here, unless the write that
    /// took the run out of RUNNING ended it already.
    pub(crate) fn release_hold(&mut self) {
        self.hold.release(&self.live);
    }

    /// The client's channel, to watch for it going away.
    pub(crate) fn client(&self) -> Option<mpsc::Sender<Delivery>> {
        self.client.clone()
    }

    /// Leaves the execution's own client, if its stream has not ended, to a
    /// follower of the run: the execution stops before the end because the
    /// run moved on elsewhere (fenced), and its stream goes on with it. Call
    /// before the run's live entry is released.
    pub(crate) fn hand_over_client(&self) {
        if let Some(feed) = lock(&self.shared.feed).take() {
            feed.hand_over();
        }
    }

    /// Ends every stream of the run here, the execution's own client's and
    /// its followers', with `refusal` (see [`Refusal`]): the store refused
    /// this execution's writes, so none of them can be told more now. Call
    /// before the run's live entry is released.
    pub(crate) fn end_streams(&self, refusal: Refusal) {
        let refusal = Arc::new(refusal);
        if let Some(feed) = lock(&self.shared.feed).take() {
            feed.end_refused(&refusal);
        }
        self.live.broadcast(Signal::Refused(refusal));
    }

    /// Why the flusher gave the run up, if the store refused its appends
    /// for a whole lease (the execution is fenced then).
    pub(crate) async fn refusal(&self) -> Option<StoreError> {
        self.shared.writer.lock().await.refused.clone()
    }

    /// Records a chunk that the next commit stores with the run's state.
    pub(crate) fn hold(&mut self, chunk: Chunk) {
        let event = next_event(&mut self.last_seq, chunk);
        lock(&self.shared.unstored).events.push(event);
    }

    /// Records a chunk to be stored and released as soon as possible (after
    /// any held chunk, in order). Waits only if the store is far behind.
    pub(crate) async fn emit_now(&mut self, chunk: Chunk) {
        let mut chunk = Some(chunk);
        // Numbered only once there is room: a step cut short while waiting
        // must not leave a seq numbered but never stored.
        loop {
            if self.live.is_fenced() {
                // The step is about to be cut short; nobody stores this.
                return;
            }
            if self.push_if_room(&mut chunk) {
                break;
            }
            let drained = self.shared.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if lock(&self.shared.unstored).len() < MAX_UNSTORED {
                continue;
            }
            self.shared.wake.notify_one();
            drained.await;
        }
        self.shared.wake.notify_one();
    }

    /// If the buffer has room: takes `chunk`, numbers it and adds it to
    /// the buffer (flushable unless a chunk is held before it). Whether it
    /// had room.
    fn push_if_room(&mut self, chunk: &mut Option<Chunk>) -> bool {
        let mut unstored = lock(&self.shared.unstored);
        if unstored.len() >= MAX_UNSTORED {
            return false;
        }
        if let Some(chunk) = chunk.take() {
            let event = next_event(&mut self.last_seq, chunk);
            let nothing_held = unstored.flushable == unstored.events.len();
            unstored.events.push(event);
            if nothing_held {
                unstored.flushable += 1;
            }
        }
        true
    }

    /// Stores `run` (as the step and its transition, if any, left it)
    /// together with every unstored chunk, under this execution's
    /// version and lease, then releases the chunks. On success `run` holds
    /// the stored version.
    ///
    /// `stored` is called once the write is stored and before its chunks
    /// are released: what it counts is counted before any client can see
    /// the change.
    pub(crate) async fn commit(
        &mut self,
        run: &mut RunRecord,
        stored: impl FnOnce(),
    ) -> Result<(), StoreError> {
        let shared = &self.shared;
        let mut writer = shared.writer.lock().await;
        if writer.stopped {
            return Err(StoreError::Superseded);
        }
        // The flusher is not writing (this holds the writer), so every
        // unstored chunk is in the buffer; on failure the execution stops,
        // and nothing is retried.
        let events = std::mem::take(&mut *lock(&shared.unstored)).events;
        // A running run's lease runs from now (the stored one ran from its
        // last renewal); a run this commit suspends or ends has none, and
        // its renewal is refused.
        run.renew_lease(shared.lease.expiry()).ok();
        shared.write(&mut writer, run, &events).await?;
        if run.status() == RunStatus::Suspended {
            shared.recent.keep(run);
        }
        // Only a running run has a lease to renew or chunks to add.
        writer.stopped = run.status() != RunStatus::Running;
        if writer.stopped {
            // The execution's hold on the run ends before anybody sees that
            // it left RUNNING, so that an answer to the suspension it
            // stored, or another run of its tenant, is taken at once.
            self.hold.release(&shared.live);
        }
        stored();
        shared.release(events);
        shared.drained.notify_waiters();
        Ok(())
    }

    /// While the run is not written yet: when it must be, at the latest
    /// (see [`FirstWriteDue`]).
    pub(crate) fn first_write_due(&self) -> Option<FirstWriteDue> {
        let writer = self.shared.writer.try_lock().ok()?;
        matches!(writer.stored, Stored::Unwritten(_)).then(|| FirstWriteDue {
            at: writer.renew_at,
            shared: Arc::clone(&self.shared),
        })
    }

    /// Writes the run now if it is not written yet (as its start or claim
    /// made it, with the chunks so far): before a tool with side effects
    /// runs, so that a crash after the call cannot lose the run that made
    /// it. A refusal stops the execution (it is fenced).
    pub(crate) async fn write_unwritten(&self) -> Result<(), StoreError> {
        let mut writer = self.shared.writer.lock().await;
        if writer.stopped {
            return Err(StoreError::Superseded);
        }
        self.shared.write_snapshot(&mut writer).await
    }

    /// The execution stops with `error` before its run was ever written
    /// (say, the thread's history could not be read): its caller is told,
    /// and its client, which saw nothing, is let go. Whether the run was
    /// unwritten.
    pub(crate) async fn stop_unwritten(&self, error: StoreError) -> bool {
        let mut writer = self.shared.writer.lock().await;
        if !matches!(writer.stored, Stored::Unwritten(_)) {
            return false;
        }
        self.shared.refuse_first_write(&mut writer, error);
        true
    }
}

/// The deadline of a run not written yet, for the step loop to wait on
/// beside its step: a step still going then has its run written by the
/// flusher, started for it, while the step goes on. (No task waits for a
/// deadline that most executions, suspending or finishing at once, never
/// reach.)
pub(crate) struct FirstWriteDue {
    at: Instant,
    shared: Arc<Shared>,
}

impl FirstWriteDue {
    /// Resolves at the deadline.
    pub(crate) async fn passed(&self) {
        tokio::time::sleep_until(self.at).await;
    }

    /// Starts the flusher, which writes the run if it still is not.
    pub(crate) fn write(self) {
        self.shared.ensure_flusher();
        self.shared.wake.notify_one();
    }
}

/// The event after `last_seq`, which it advances.
fn next_event(last_seq: &mut u64, chunk: Chunk) -> Event {
    *last_seq += 1;
    Event {
        seq: *last_seq,
        time: Timestamp::now(),
        chunk,
    }
}

impl Drop for Emitter {
    fn drop(&mut self) {
        if let Some(flusher) = lock(&self.shared.flusher).take() {
            flusher.abort();
        }
        self.hand_over_client();
    }
}

impl Writer {
    /// The version the store holds, as far as this execution knows.
    fn version(&self) -> u64 {
        match &self.stored {
            Stored::At(position) => position.version,
            Stored::Unwritten(_) => 0,
        }
    }

    fn stored(&mut self, lease: &LeaseSettings) {
        let now = Instant::now();
        self.stored_at = now;
        self.renew_at = now + lease.renew_every;
    }

    fn fence(&mut self, live: &LiveRun) {
        self.stopped = true;
        live.fence();
    }
}

impl Shared {
    /// Spawns the flusher, unless there is one.
    fn ensure_flusher(self: &Arc<Self>) {
        let mut flusher = lock(&self.flusher);
        if flusher.is_none() {
            *flusher = Some(tokio::spawn(Arc::clone(self).flush_loop()));
        }
    }

    /// Stores `run` (as it is now) with `events` under the writer's guard:
    /// the first write creates the run or claims its suspension, every
    /// later one is a compare-and-set on the version the previous one left.
    /// On success the writer knows the new position. A refused first write
    /// stops the execution (see [`Shared::refuse_first_write`]); a later
    /// one refused by the version guard fences it.
    async fn write(
        self: &Arc<Self>,
        writer: &mut Writer,
        run: &mut RunRecord,
        events: &[Event],
    ) -> Result<(), StoreError> {
        let outcome = match &writer.stored {
            Stored::At(position) => {
                let expected = run.commit_after(*position, events);
                let run_events = RunEventKind::of_write(None, run.status());
                self.runs.commit(run, expected, events, &run_events).await
            }
            Stored::Unwritten(first) => match first.begin {
                Begin::Start => {
                    run.commit_after(Position::default(), events);
                    self.runs.create_run(run, events).await
                }
                Begin::Claim { suspended, .. } => {
                    let expected = run.commit_after(suspended, events);
                    let run_events = RunEventKind::of_write(Some(RunEventKind::Resumed), run.status());
                    self.runs.commit(run, expected, events, &run_events).await
                }
            },
        };
        match outcome {
            Ok(()) => {
                let was = std::mem::replace(&mut writer.stored, Stored::At(run.position()));
                writer.stored(&self.lease);
                if let Stored::Unwritten(first) = was {
                    first.written(run, &self.metrics);
                    // Running on: its chunks are appended and its lease
                    // renewed from now on.
                    if run.status() == RunStatus::Running {
                        self.ensure_flusher();
                    }
                }
                Ok(())
            }
            Err(error) if matches!(writer.stored, Stored::Unwritten(_)) => {
                self.refuse_first_write(writer, error.clone());
                Err(error)
            }
            Err(error) => {
                if matches!(error, StoreError::VersionConflict { .. } | StoreError::NotFound) {
                    writer.fence(&self.live);
                }
                Err(error)
            }
        }
    }

    /// Writes a run not written yet as its start or claim made it, with
    /// the chunks that may be stored now, and releases them; nothing if
    /// the run is written already.
    async fn write_snapshot(self: &Arc<Self>, writer: &mut Writer) -> Result<(), StoreError> {
        let Stored::Unwritten(first) = &mut writer.stored else {
            return Ok(());
        };
        let Some(mut run) = first.snapshot.take() else {
            return Ok(());
        };
        run.renew_lease(self.lease.expiry()).ok();
        let batch: Vec<Event> = {
            let mut unstored = lock(&self.unstored);
            let flushable = std::mem::take(&mut unstored.flushable);
            unstored.in_flight = flushable;
            unstored.events.drain(..flushable).collect()
        };
        let written = self.write(writer, &mut run, &batch).await;
        lock(&self.unstored).in_flight = 0;
        if written.is_ok() {
            self.release(batch);
        }
        self.drained.notify_waiters();
        written
    }

    /// The first write was refused (or never made): nothing of the run is
    /// stored and nobody saw any of it. The execution stops without
    /// writing, its client (whose caller gets `error` instead of a stream)
    /// is let go rather than handed to a follower, and the caller is told.
    fn refuse_first_write(&self, writer: &mut Writer, error: StoreError) {
        writer.fence(&self.live);
        lock(&self.feed).take();
        if let Stored::Unwritten(first) =
            std::mem::replace(&mut writer.stored, Stored::At(Position::default()))
        {
            let _ = first.told.send(Err(error));
        }
    }

    /// Releases chunks just stored, in the order they were stored (the
    /// caller holds the writer): to the execution's own client, then to
    /// whoever follows the run here.
    fn release(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let events: Arc<[Event]> = events.into();
        {
            let mut feed = lock(&self.feed);
            if let Some(client) = feed.take() {
                *feed = client.deliver(Arc::clone(&events));
            }
        }
        self.live.release_stored(events);
    }

    /// Appends what is flushable, renews the lease when due; until fenced.
    async fn flush_loop(self: Arc<Self>) {
        loop {
            let renew_at = self.writer.lock().await.renew_at;
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep_until(renew_at) => {}
            }
            // Let the step emit what it has ready, so that chunks produced
            // together are stored together.
            tokio::task::yield_now().await;
            if !self.flush().await {
                return;
            }
        }
    }

    /// One append (or renewal); whether to go on.
    async fn flush(self: &Arc<Self>) -> bool {
        let mut writer = self.writer.lock().await;
        if writer.stopped {
            return false;
        }
        if matches!(writer.stored, Stored::Unwritten(_)) {
            // Held until the run is written: by the execution's first
            // commit, or here once the deadline has passed.
            if Instant::now() < writer.renew_at {
                return true;
            }
            return self.write_snapshot(&mut writer).await.is_ok();
        }
        // Taken out of the buffer (counted as in flight) rather than
        // copied: put back in front if the append fails.
        let batch: Vec<Event> = {
            let mut unstored = lock(&self.unstored);
            if unstored.flushable == 0 && Instant::now() < writer.renew_at {
                return true;
            }
            let flushable = std::mem::take(&mut unstored.flushable);
            unstored.in_flight = flushable;
            unstored.events.drain(..flushable).collect()
        };
        let id = self.live.id();
        let version = writer.version();
        let expiry = Some(self.lease.expiry());
        match self.runs.append_events(id, version, expiry, &batch).await {
            Ok(()) => {
                if let Stored::At(position) = &mut writer.stored {
                    *position = position.after_append(batch.last().map(|event| event.seq));
                }
                writer.stored(&self.lease);
                lock(&self.unstored).in_flight = 0;
                self.release(batch);
                self.drained.notify_waiters();
                true
            }
            Err(StoreError::VersionConflict { .. } | StoreError::NotFound) => {
                tracing::info!(run_id = %id, "the run moved on elsewhere; this execution stops");
                writer.fence(&self.live);
                self.drained.notify_waiters();
                false
            }
            Err(error) => {
                if writer.stored_at.elapsed() >= self.lease.ttl {
                    tracing::error!(run_id = %id, %error, "the store refused every write for a whole lease; giving the run up for recovery");
                    writer.refused = Some(error);
                    writer.fence(&self.live);
                    self.drained.notify_waiters();
                    return false;
                }
                tracing::warn!(run_id = %id, %error, "could not store chunks; retrying");
                lock(&self.unstored).put_back(batch);
                drop(writer);
                tokio::time::sleep(RETRY_PAUSE).await;
                self.wake.notify_one();
                true
            }
        }
    }
}

impl ChunkSink for Emitter {
    async fn emit(&mut self, chunk: Chunk) {
        self.emit_now(chunk).await;
    }

    async fn before_side_effects(&mut self) {
        if self.write_unwritten().await.is_err() {
            // The execution is fenced: the step waits here to be cut short
            // (see `drive.rs`), and the tool never runs.
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Staged;
    use crate::runtime::fanout::{ClientFeed, LiveRuns};
    use crate::store::MemoryStore;

    /// A run that an execution starts, and its first chunk (from a stream
    /// the execution's client did not see).
    fn new_run() -> (RunRecord, Staged) {
        let options = crate::domain::RunOptions {
            max_steps: 1,
            suspend_ttl: Duration::from_secs(1),
            ..Default::default()
        };
        let lease = crate::domain::Lease::vacant();
        RunRecord::start(
            crate::domain::RunId::new(),
            Default::default(),
            "a".into(),
            options,
            Default::default(),
            lease,
            Timestamp(0),
        )
    }

    #[tokio::test]
    async fn the_write_that_suspends_a_run_ends_its_hold_before_releasing_its_chunks() {
        let runs = LiveRuns::default();
        let (mut run, first) = new_run();
        let live = runs.start_execution(run.id);
        // A client that saw nothing of the run cannot take the chunks after
        // seq 1: the feed hands it over in the middle of their release, and
        // the hand-over looks at the run then.
        let (client, _stream) = mpsc::channel(4);
        let executing_then = Arc::new(Mutex::new(None));
        let (seen, watched) = (Arc::clone(&executing_then), Arc::clone(&live));
        let hand_over = Box::new(move |_, _| *lock(&seen) = Some(watched.is_executing()));
        let feed = ClientFeed::new(client, 0, hand_over);
        let store: Arc<dyn RunStore> = Arc::new(MemoryStore::default());
        store.create_run(&run, &first.events).await.expect("created");
        let config = RuntimeConfig::default();
        let recent = Arc::default();
        let mut emitter = Emitter::start(
            store,
            recent,
            Arc::clone(&live),
            &run,
            &config,
            Some(feed),
            None,
            None,
        );
        let question = crate::domain::PendingCall {
            call: crate::domain::ToolCall {
                id: "call_1".into(),
                name: "human_review".into(),
                args: serde_json::json!({}).into(),
            },
            waiting: crate::domain::Waiting::Approval,
            since: None,
        };
        let pending = crate::domain::PendingCalls::one(question);
        for chunk in run
            .suspend(pending, &Default::default(), Timestamp::now())
            .expect("running")
        {
            emitter.hold(chunk);
        }
        emitter.commit(&mut run, || {}).await.expect("stored");
        assert_eq!(
            *lock(&executing_then),
            Some(false),
            "released while the run still executed here"
        );
    }
}
