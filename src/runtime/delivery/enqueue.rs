//! A ledger's enqueuer: follows the run events from the ledger's cursor
//! (stored at the head of the events when the ledger is first seen) and
//! turns them into the pending deliveries its endpoint makes of them, moving the cursor
//! past every event it read in the same write (a compare-and-set). Every
//! replica runs one per endpoint; when two read the same events, the first
//! write wins and the other, refused, continues from the stored cursor, so
//! an event is enqueued once. It reads again after each signal of the
//! store, like a WatchRuns follower (`runtime/fanout/watch.rs`). It never
//! sends anything.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::{Endpoint, ReadTables};
use crate::domain::{EventPosition, Timestamp};
use crate::runtime::RuntimeError;
use crate::store::{DeliveryLedger, Enqueue, RunEventLog, StoreError};

/// Events read from the store at once.
const PAGE: usize = 256;
/// How often a shared store is read again without a signal.
const RECHECK: Duration = Duration::from_secs(1);
/// How long the enqueuer lets events gather before it reads again, after a
/// signal, a page that was not full, or events still settling: the events
/// of writes close together then take one read, one lookup of their
/// targets and one cursor write, instead of a few per event (without it,
/// the push ledger, which runs on every server, cost PostgreSQL about ten
/// statements per ask_user cycle with one client).
const GATHER: Duration = Duration::from_millis(50);
/// How long a failed store call waits before the next.
const STORE_RETRY: Duration = Duration::from_secs(1);

pub(super) struct Enqueuer {
    /// Read from the ledger's cursor on.
    pub(super) run_events: Arc<dyn RunEventLog>,
    /// Where the cursor and the deliveries are stored.
    pub(super) ledger: Arc<dyn DeliveryLedger>,
    /// What the endpoint reads to make its deliveries.
    pub(super) reads: ReadTables,
    /// Whether other servers share the store (their events come without a
    /// signal here).
    pub(super) shared: bool,
    pub(super) endpoint: Arc<dyn Endpoint>,
    /// Told when deliveries were enqueued.
    pub(super) enqueued: Arc<Notify>,
    /// The stored cursor, read before the server served anything.
    pub(super) cursor: EventPosition,
}

/// What one read came to.
enum Step {
    /// The cursor moved here, after a full page (read on at once) or not.
    Moved { to: EventPosition, full: bool },
    /// Another replica moved the cursor first.
    Lost,
    /// Nothing after the cursor (yet, when settling).
    CaughtUp { settling: bool },
}

impl Enqueuer {
    pub(super) async fn run(self) {
        let shared = self.shared;
        let mut signal = self.run_events.run_events_signal();
        signal.borrow_and_update();
        let mut cursor = Some(self.cursor);
        loop {
            let step = match cursor {
                None => self.start().await.map(|to| Step::Moved { to, full: true }),
                Some(position) => self.step(position).await,
            };
            let wait = match step {
                Ok(Step::Moved { to, full }) => {
                    cursor = Some(to);
                    if full {
                        continue;
                    }
                    GATHER
                }
                Ok(Step::Lost) => {
                    // Read the stored cursor again.
                    cursor = None;
                    continue;
                }
                Ok(Step::CaughtUp { settling: true }) => GATHER,
                Ok(Step::CaughtUp { settling: false }) if shared => RECHECK,
                Ok(Step::CaughtUp { settling: false }) => Duration::MAX,
                Err(error) => {
                    tracing::warn!(webhook = %self.endpoint.name(), %error, "webhook: could not enqueue deliveries");
                    STORE_RETRY
                }
            };
            tokio::select! {
                changed = signal.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    tokio::time::sleep(GATHER).await;
                }
                () = sleep(wait) => {}
            }
        }
    }

    async fn start(&self) -> Result<EventPosition, RuntimeError> {
        Ok(start(
            self.run_events.as_ref(),
            self.ledger.as_ref(),
            self.endpoint.as_ref(),
        )
        .await?)
    }

    async fn step(&self, cursor: EventPosition) -> Result<Step, RuntimeError> {
        let page = self
            .run_events
            .read_run_events(self.endpoint.tenant(), cursor, PAGE)
            .await?;
        let Some(last) = page.events.last().map(|event| event.position) else {
            return Ok(Step::CaughtUp {
                settling: page.settling,
            });
        };
        let deliveries = self
            .endpoint
            .deliveries(&self.reads.reads(), &page.events)
            .await?;
        let moved = self
            .ledger
            .enqueue_deliveries(
                self.endpoint.name(),
                &Enqueue {
                    from: cursor,
                    to: last,
                    deliveries: &deliveries,
                    now: Timestamp::now(),
                },
            )
            .await?;
        if !moved {
            return Ok(Step::Lost);
        }
        if !deliveries.is_empty() {
            self.enqueued.notify_one();
        }
        Ok(Step::Moved {
            to: last,
            full: page.events.len() >= PAGE,
        })
    }
}

/// `endpoint`'s stored cursor; a ledger seen for the first time is stored
/// at the head of the events, so that it sends what happens from now on.
pub(super) async fn start(
    run_events: &dyn RunEventLog,
    ledger: &dyn DeliveryLedger,
    endpoint: &dyn Endpoint,
) -> Result<EventPosition, StoreError> {
    let head = run_events.run_events_head().await?;
    ledger.ledger_cursor(endpoint.name(), head).await
}

/// Sleeps for `duration`, or forever for `Duration::MAX`.
pub(super) async fn sleep(duration: Duration) {
    match tokio::time::Instant::now().checked_add(duration) {
        Some(at) if duration != Duration::MAX => tokio::time::sleep_until(at).await,
        _ => std::future::pending().await,
    }
}
