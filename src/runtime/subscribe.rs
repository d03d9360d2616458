//! Following a run: replay its stored chunks after a seq, then its live
//! chunks, with no gap and no duplicate whatever the timing. Used by
//! SubscribeRun, and by retried StreamAgent and Resume calls (idempotency).

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};

use super::live::{Joined, LiveRun, Signal};
use super::{Inner, RunStream, Runtime, RuntimeError};
use crate::chunk::{Chunk, Event};
use crate::run::{RunId, RunStatus};

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
pub(super) enum Wanted {
    /// SubscribeRun: after `after_seq`, following the run if it is running
    /// (or waiting on it if it is suspended and nothing is replayed).
    Subscription { after_seq: u64 },
    /// One stream of the run (a start or a continuation) from its first seq
    /// to its `finish`.
    Segment { first_seq: u64 },
}

fn is_finish(event: &Event) -> bool {
    matches!(event.chunk, Chunk::Finish { .. })
}

/// Stored events then unstored ones, strictly increasing, after `after`.
fn merge(stored: Vec<Event>, unstored: Vec<Event>, after: u64) -> Vec<Event> {
    let mut last = after;
    let mut merged = Vec::with_capacity(stored.len() + unstored.len());
    for event in stored.into_iter().chain(unstored) {
        if event.seq == last + 1 {
            last = event.seq;
            merged.push(event);
        }
    }
    merged
}

impl Runtime {
    /// SubscribeRun: replays the chunks after `after_seq`, then follows the
    /// run live to its next `finish` if it is running, or waits for its
    /// continuation if it is suspended and nothing was replayed.
    pub async fn subscribe(&self, run_id: RunId, after_seq: u64) -> Result<RunStream, RuntimeError> {
        self.follow(run_id, Wanted::Subscription { after_seq }).await
    }

    pub(super) async fn follow(&self, run_id: RunId, wanted: Wanted) -> Result<RunStream, RuntimeError> {
        let live = self.inner.live.entry(run_id);
        // Join before reading the store: whatever the store misses, the
        // join's snapshot or broadcast has.
        let joined = live.join();
        match plan(&self.inner, run_id, wanted, joined).await {
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
                Ok(RunStream { run_id, events })
            }
            Err(error) => {
                drop(live);
                self.inner.live.release(run_id);
                Err(error)
            }
        }
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
async fn plan(inner: &Inner, run_id: RunId, wanted: Wanted, joined: Joined) -> Result<Plan, RuntimeError> {
    let run = inner.store.load_run(run_id).await?;
    let run = inner.expire_if_due(run).await?;
    let after_seq = match wanted {
        Wanted::Subscription { after_seq } => after_seq,
        Wanted::Segment { first_seq } => first_seq.saturating_sub(1),
    };
    let last_known = joined
        .unstored
        .last()
        .map_or(run.last_seq, |e| e.seq.max(run.last_seq));
    if after_seq > last_known {
        return Err(RuntimeError::InvalidRequest {
            field: "after_seq",
            reason: format!("after_seq {after_seq} is beyond the run's last seq {last_known}"),
        });
    }
    let stored = inner.store.read_events(run_id, after_seq).await?;
    let replay = merge(stored, joined.unstored, after_seq);
    let follow = match (wanted, run.status) {
        (Wanted::Segment { .. }, _) => Follow::UntilFinishAfter(after_seq),
        (_, RunStatus::Running) => Follow::UntilFinishAfter(run.last_seq),
        (_, RunStatus::Suspended) if replay.is_empty() => Follow::UntilFinishAfter(run.last_seq),
        _ => Follow::ReplayOnly,
    };
    Ok(Plan {
        after_seq,
        replay,
        follow,
        signals: joined.signals,
    })
}

/// Sends one subscriber its chunks.
struct Forwarder {
    inner: Arc<Inner>,
    live: Arc<LiveRun>,
    client: mpsc::Sender<Event>,
    follow: Follow,
}

/// Whether the subscription goes on after a chunk.
enum Next {
    More,
    Done,
}

impl Forwarder {
    async fn run(self, after_seq: u64, replay: Vec<Event>, signals: broadcast::Receiver<Signal>) {
        let run_id = self.live.id();
        self.forward(after_seq, replay, signals).await;
        let Forwarder { inner, live, .. } = self;
        drop(live);
        inner.live.release(run_id);
    }

    async fn forward(&self, after_seq: u64, replay: Vec<Event>, mut signals: broadcast::Receiver<Signal>) {
        let mut last = after_seq;
        for event in replay {
            last = event.seq;
            if let Next::Done = self.deliver(event).await {
                return;
            }
        }
        if self.follow == Follow::ReplayOnly {
            return;
        }
        loop {
            let event = match signals.recv().await {
                Ok(Signal::Chunk(event)) if event.seq <= last => continue,
                Ok(Signal::Chunk(event)) if event.seq == last + 1 => event,
                Ok(Signal::Closed) | Err(broadcast::error::RecvError::Closed) => return,
                // Fell behind, or a gap: rejoin and catch up from the store.
                Ok(Signal::Chunk(_)) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    let joined = self.live.join();
                    signals = joined.signals;
                    let stored = match self.inner.store.read_events(self.live.id(), last).await {
                        Ok(stored) => stored,
                        Err(error) => {
                            tracing::warn!(%error, "subscriber could not catch up from the store");
                            return;
                        }
                    };
                    for event in merge(stored, joined.unstored, last) {
                        last = event.seq;
                        if let Next::Done = self.deliver(event).await {
                            return;
                        }
                    }
                    continue;
                }
            };
            last = event.seq;
            if let Next::Done = self.deliver(event).await {
                return;
            }
        }
    }

    async fn deliver(&self, event: Event) -> Next {
        let ends = match self.follow {
            Follow::UntilFinishAfter(after) => is_finish(&event) && event.seq > after,
            Follow::ReplayOnly => false,
        };
        if self.client.send(event).await.is_err() {
            return Next::Done;
        }
        if ends {
            Next::Done
        } else {
            Next::More
        }
    }
}
