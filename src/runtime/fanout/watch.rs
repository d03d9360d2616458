//! Watching a tenant's run events (`WatchRuns`): the stored events after
//! the watcher's cursor, read page by page, then the new ones as the store
//! signals them. There is only ever one source, the store: a watcher reads
//! again after each signal from where it is, so the seam between replay and
//! live has neither a gap nor a duplicate by construction, and a watcher on
//! one replica sees the events of runs executing on another (a shared
//! store's signal fires at the other replicas' notifications).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tracing::Instrument;

use crate::domain::{EventCursor, EventPosition, RunEvent, RunEventKind, Tenant, Timestamp};
use crate::runtime::{Runtime, RuntimeError};
use crate::store::RunEventLog;

/// Events read from the store at once.
const PAGE: usize = 256;

/// Events waiting for a slow watcher before the reading waits for it.
const BUFFER: usize = 64;

/// How soon a shared store is read again when events after the last read
/// were still settling (see `RunEventPage::settling`).
const SETTLE: Duration = Duration::from_millis(20);

/// How often a shared store is read again without a signal: a replica that
/// died between a commit and its notification left an event unannounced.
const RECHECK: Duration = Duration::from_secs(1);

/// What a watcher wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchRuns {
    /// Continue after this event; `None`: from now on.
    pub after: Option<EventCursor>,
    /// Only events of these kinds; empty: every kind.
    pub kinds: Vec<RunEventKind>,
    /// Only events of this agent's runs.
    pub agent_id: Option<String>,
}

impl WatchRuns {
    fn wants(&self, event: &RunEvent) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&event.kind))
            && self
                .agent_id
                .as_ref()
                .is_none_or(|agent| *agent == event.agent_id)
    }
}

/// A watcher's events, as they come; ends with an error only when the store
/// fails (the watcher continues after its last cursor).
pub struct RunEventStream {
    events: mpsc::Receiver<Result<RunEvent, RuntimeError>>,
}

impl Stream for RunEventStream {
    type Item = Result<RunEvent, RuntimeError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_recv(cx)
    }
}

impl Runtime {
    /// `tenant`'s run events that `watch` wants, after its cursor, then as
    /// they happen. Refuses a cursor after every event the store has given
    /// (no server made it), and one older than what the store keeps (the
    /// thread retention: events after it may be gone with their runs).
    pub(in crate::runtime) async fn watch_run_events(
        &self,
        tenant: &Tenant,
        watch: WatchRuns,
    ) -> Result<RunEventStream, RuntimeError> {
        let run_events = Arc::clone(&self.inner.store.run_events);
        let shared = self.inner.store.presence.sharing().is_shared();
        // Taken before the first read: a write after it marks it changed.
        let mut signal = run_events.run_events_signal();
        signal.borrow_and_update();
        let head = run_events.run_events_head().await?;
        let start = match &watch.after {
            None => head,
            Some(cursor) => {
                if let Some(retention) = self.inner.config.thread_retention {
                    let kept_since = Timestamp::now().before(retention);
                    if cursor.time < kept_since {
                        return Err(RuntimeError::CursorExpired {
                            cursor: cursor.encode(),
                            retention: humantime::format_duration(retention).to_string(),
                        });
                    }
                }
                if cursor.position > head {
                    return Err(RuntimeError::UnknownCursor(cursor.encode()));
                }
                cursor.position
            }
        };
        let (sender, events) = mpsc::channel(BUFFER);
        let follower = Follower {
            run_events,
            shared,
            tenant: tenant.clone(),
            watch,
            position: start,
            signal,
            sender,
        };
        let span = tracing::debug_span!("watch_runs", %tenant);
        tokio::spawn(follower.run().instrument(span));
        Ok(RunEventStream { events })
    }
}

/// The task behind one [`RunEventStream`]; ends when its client goes.
struct Follower {
    /// The one table a watcher reads.
    run_events: Arc<dyn RunEventLog>,
    /// Whether other servers share the store (their events come without a
    /// signal here).
    shared: bool,
    tenant: Tenant,
    watch: WatchRuns,
    /// The last event read (wanted or not).
    position: EventPosition,
    signal: watch::Receiver<()>,
    sender: mpsc::Sender<Result<RunEvent, RuntimeError>>,
}

impl Follower {
    async fn run(mut self) {
        let shared = self.shared;
        loop {
            let page = match self
                .run_events
                .read_run_events(Some(&self.tenant), self.position, PAGE)
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    let _ = self.sender.send(Err(error.into())).await;
                    return;
                }
            };
            let full = page.events.len() == PAGE;
            for event in page.events {
                self.position = event.position;
                if self.watch.wants(&event) && self.sender.send(Ok(event)).await.is_err() {
                    return;
                }
            }
            if full {
                continue;
            }
            let again = match (page.settling, shared) {
                (true, _) => SETTLE,
                (false, true) => RECHECK,
                // An owned store signals every event it stores.
                (false, false) => Duration::MAX,
            };
            tokio::select! {
                changed = self.signal.changed() => {
                    if changed.is_err() {
                        // The store is gone: the server is shutting down.
                        return;
                    }
                }
                () = sleep(again) => {}
                () = self.sender.closed() => return,
            }
        }
    }
}

/// Sleeps for `duration`, or forever for `Duration::MAX`.
async fn sleep(duration: Duration) {
    match tokio::time::Instant::now().checked_add(duration) {
        Some(at) if duration != Duration::MAX => tokio::time::sleep_until(at).await,
        _ => std::future::pending().await,
    }
}
