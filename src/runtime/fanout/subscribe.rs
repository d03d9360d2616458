//! Following a run: replay its stored chunks after a seq, then its live
//! chunks, with no gap and no duplicate whatever the timing, whichever
//! replica executes it. Used by SubscribeRun, by retried StreamAgent and
//! Resume calls (idempotency), and by every StreamAgent and Resume stream
//! itself: a client follows the run it started, so if the execution moves
//! to another replica (a takeover, a cancel) the stream goes on with it.

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};

use super::live::{LiveRun, Signal};
use super::stream::{continuation, ClientFeed, Delivery, Next, Refusal, RunStream};
use crate::domain::{Event, RunId, RunStatus, Tenant, Usage};
use crate::runtime::{Inner, Runtime, RuntimeError};
use crate::store::StoreError;

/// How long a follower of a run in a shared store waits without any signal
/// before it reads the store anyway.
const QUIET_RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// How far a subscription goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Follow {
    /// Replay what exists, then close.
    ReplayOnly,
    /// Replay, then follow live until a `finish` whose seq is past this.
    UntilFinishAfter(u64),
}

/// Which part of a run a caller wants.
#[derive(Clone, Copy, Debug)]
pub(in crate::runtime) enum Wanted {
    /// SubscribeRun: after `after_seq`, following the run if it is running
    /// (or waiting on it if it is suspended and nothing is replayed).
    Subscription { after_seq: u64 },
    /// One stream of the run (a start or a continuation) from its first seq
    /// to its `finish`.
    Segment { first_seq: u64 },
}

/// The events that continue `after` without a gap.
fn contiguous(events: Vec<Event>, after: u64) -> Vec<Event> {
    let mut last = after;
    let mut kept = Vec::with_capacity(events.len());
    for event in events {
        if event.seq == last + 1 {
            last = event.seq;
            kept.push(event);
        }
    }
    kept
}

impl Runtime {
    /// SubscribeRun: replays the chunks after `after_seq`, then follows the
    /// run live to its next `finish` if it is running, or waits for its
    /// continuation if it is suspended and nothing was replayed. Only
    /// `tenant`'s runs can be followed; another tenant's is not found.
    #[tracing::instrument(skip_all, fields(%tenant, %run_id, after_seq))]
    pub(in crate::runtime) async fn subscribe_run(
        &self,
        tenant: &Tenant,
        run_id: RunId,
        after_seq: u64,
    ) -> Result<RunStream, RuntimeError> {
        self.follow(tenant, run_id, Wanted::Subscription { after_seq })
            .await
    }

    /// Streams `wanted` of `tenant`'s run `run_id` (another tenant's run is
    /// not found).
    pub(in crate::runtime) async fn follow(
        &self,
        tenant: &Tenant,
        run_id: RunId,
        wanted: Wanted,
    ) -> Result<RunStream, RuntimeError> {
        let live = self.inner.live.entry(run_id);
        // Join before reading the store: whatever the store misses, the
        // broadcast has.
        let joined = live.join();
        // Boxed: a follow is rare on the paths that call it (replays of
        // StartRun and Resume), whose futures stay small.
        match Box::pin(plan(&self.inner, tenant, run_id, wanted, joined)).await {
            Ok(Plan {
                after_seq,
                replay,
                follow,
                signals,
            }) => {
                let (client, events) = mpsc::channel(self.inner.config.stream_buffer);
                let forwarder = Forwarder {
                    inner: Arc::clone(&self.inner),
                    live,
                    client,
                    follow,
                };
                tokio::spawn(forwarder.run(after_seq, replay, signals));
                Ok(RunStream::new(run_id, events))
            }
            Err(error) => {
                drop(live);
                self.inner.live.release(run_id);
                Err(error)
            }
        }
    }

    /// The stream of an execution about to start here, of the chunks after
    /// `after_seq`: `first`, the events its starting commit stored (if
    /// any), then what the execution stores, which its emitter hands the
    /// stream straight from each write (see [`ClientFeed`]). Returns the
    /// stream and that feed (none if `first` ended the stream already).
    pub(in crate::runtime) fn execution_stream(
        &self,
        live: &Arc<LiveRun>,
        after_seq: u64,
        first: Vec<Event>,
    ) -> (RunStream, Option<ClientFeed>) {
        let (client, events) = mpsc::channel(self.inner.config.stream_buffer);
        let inner = Arc::clone(&self.inner);
        let follower_live = Arc::clone(live);
        let hand_over = Box::new(move |client, last| {
            // Joined at once, so that the run's live entry stays while the
            // follower starts.
            let signals = follower_live.join();
            let forwarder = Forwarder {
                inner,
                live: follower_live,
                client,
                follow: Follow::UntilFinishAfter(after_seq),
            };
            // Only a runtime being shut down has none: nobody to follow for.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(forwarder.run_from_store(last, signals));
            }
        });
        let feed = ClientFeed::new(client, after_seq, hand_over);
        // The channel is new and empty: `first` cannot find it full.
        let feed = if first.is_empty() {
            Some(feed)
        } else {
            feed.deliver(first.into())
        };
        (RunStream::new(live.id(), events), feed)
    }
}

/// What a subscriber is sent.
struct Plan {
    /// Chunks after this seq.
    after_seq: u64,
    replay: Vec<Event>,
    follow: Follow,
    signals: broadcast::Receiver<Signal>,
}

/// Reads the store and decides what to replay and how far to follow.
async fn plan(
    inner: &Arc<Inner>,
    tenant: &Tenant,
    run_id: RunId,
    wanted: Wanted,
    signals: broadcast::Receiver<Signal>,
) -> Result<Plan, RuntimeError> {
    let mut run = inner.load_run_of(tenant, run_id).await?;
    inner.expire_if_due(&mut run).await?;
    let after_seq = match wanted {
        Wanted::Subscription { after_seq } => after_seq,
        Wanted::Segment { first_seq } => first_seq.saturating_sub(1),
    };
    let last_known = run.last_seq();
    if after_seq > last_known {
        return Err(RuntimeError::InvalidRequest {
            field: "after_seq",
            reason: format!("after_seq {after_seq} is beyond the run's last seq {last_known}"),
        });
    }
    let stored = inner.store.runs.read_events(run_id, after_seq).await?;
    let replay = contiguous(stored, after_seq);
    let follow = match (wanted, run.status()) {
        (Wanted::Segment { .. }, _) => Follow::UntilFinishAfter(after_seq),
        (_, RunStatus::Running) => Follow::UntilFinishAfter(run.last_seq()),
        (_, RunStatus::Suspended) if replay.is_empty() => Follow::UntilFinishAfter(run.last_seq()),
        _ => Follow::ReplayOnly,
    };
    Ok(Plan {
        after_seq,
        replay,
        follow,
        signals,
    })
}

/// Sends one subscriber its chunks.
struct Forwarder {
    inner: Arc<Inner>,
    live: Arc<LiveRun>,
    client: mpsc::Sender<Delivery>,
    follow: Follow,
}

impl Forwarder {
    async fn run(self, after_seq: u64, replay: Vec<Event>, signals: broadcast::Receiver<Signal>) {
        let run_id = self.live.id();
        self.forward(after_seq, replay, signals).await;
        let Forwarder { inner, live, .. } = self;
        drop(live);
        inner.live.release(run_id);
    }

    /// Follows the run from the store on, after `last`: for a client whose
    /// stream an execution fed until it could not any more.
    async fn run_from_store(self, mut last: u64, signals: broadcast::Receiver<Signal>) {
        let run_id = self.live.id();
        if let Next::More = self.catch_up(&mut last).await {
            self.follow_live(last, signals).await;
        }
        let Forwarder { inner, live, .. } = self;
        drop(live);
        inner.live.release(run_id);
    }

    async fn forward(&self, after_seq: u64, replay: Vec<Event>, signals: broadcast::Receiver<Signal>) {
        let mut last = after_seq;
        if let Next::Done = self.deliver(replay.into(), &mut last).await {
            return;
        }
        if self.follow == Follow::ReplayOnly {
            return;
        }
        self.follow_live(last, signals).await;
    }

    /// Delivers the chunks after `last` as they are stored, until the
    /// subscription ends.
    async fn follow_live(&self, mut last: u64, mut signals: broadcast::Receiver<Signal>) {
        loop {
            match self.next_signal(&mut signals).await {
                Ok(Signal::Chunks(events)) => match self.deliver(events, &mut last).await {
                    Next::More => continue,
                    Next::Done => return,
                    Next::Gap => {}
                },
                Ok(Signal::Closed) | Err(broadcast::error::RecvError::Closed) => return,
                Ok(Signal::Refused(refusal)) => {
                    // What was stored after `last` first (reads may still
                    // be served), then the ending, unless that ended it.
                    if let Next::More = self.catch_up(&mut last).await {
                        refusal.end(&self.client, last).await;
                    }
                    return;
                }
                Ok(Signal::Recheck) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            }
            // Fell behind, a gap, or a change announced without its
            // chunks: rejoin and catch up from the store.
            signals = self.live.join();
            if let Next::Done = self.catch_up(&mut last).await {
                return;
            }
        }
    }

    /// Delivers, in one go, what of `events` continues the subscription
    /// (see [`continuation`]).
    async fn deliver(&self, events: Arc<[Event]>, last: &mut u64) -> Next {
        let ends_after = match self.follow {
            Follow::UntilFinishAfter(after) => Some(after),
            Follow::ReplayOnly => None,
        };
        let (delivery, next) = continuation(events, last, ends_after);
        if let Some(delivery) = delivery {
            if self.client.send(delivery).await.is_err() {
                return Next::Done;
            }
        }
        next
    }

    /// The next signal; with a shared store, a `Recheck` after a quiet
    /// [`QUIET_RECHECK`], in case the notification of a write was lost (its
    /// writer died right after committing it).
    async fn next_signal(
        &self,
        signals: &mut broadcast::Receiver<Signal>,
    ) -> Result<Signal, broadcast::error::RecvError> {
        if !self.inner.store.presence.sharing().is_shared() {
            return signals.recv().await;
        }
        match tokio::time::timeout(QUIET_RECHECK, signals.recv()).await {
            Ok(signal) => signal,
            Err(_) => Ok(Signal::Recheck),
        }
    }

    /// Delivers what the store has after `last`; done if that ends the
    /// subscription, or if the run can have nothing more to deliver (it
    /// left RUNNING and SUSPENDED without a chunk, e.g. it expired).
    async fn catch_up(&self, last: &mut u64) -> Next {
        let run_id = self.live.id();
        let stored = match self.inner.store.runs.read_events(run_id, *last).await {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, "subscriber could not catch up from the store");
                self.end_unreadable(error, *last).await;
                return Next::Done;
            }
        };
        let stored = contiguous(stored, *last);
        if let Next::Done = self.deliver(stored.into(), last).await {
            return Next::Done;
        }
        match self.inner.store.runs.load_run(run_id).await {
            Ok(run) if matches!(run.status(), RunStatus::Running | RunStatus::Suspended) => Next::More,
            Ok(run) if run.last_seq() > *last => Next::More,
            Ok(_) => Next::Done,
            Err(error) => {
                tracing::warn!(%error, "subscriber could not read the run");
                self.end_unreadable(error, *last).await;
                Next::Done
            }
        }
    }

    /// Ends a stream that follows a run to its `finish` but cannot read it
    /// from the store, with an unstored ending (see [`Refusal`]).
    async fn end_unreadable(&self, error: StoreError, last: u64) {
        if let Follow::UntilFinishAfter(_) = self.follow {
            let refusal = Refusal {
                error: error.to_string(),
                usage: Usage::default(),
            };
            refusal.end(&self.client, last).await;
        }
    }
}
