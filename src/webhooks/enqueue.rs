//! A webhook's enqueuer: follows the run events from the webhook's cursor
//! (stored at the head of the events when the webhook is first seen) and
//! turns the events it wants into pending deliveries, moving the cursor
//! past every event it read in the same write (a compare-and-set). Every
//! replica runs one per webhook; when two read the same events, the first
//! write wins and the other, refused, continues from the stored cursor, so
//! an event is enqueued once. It reads again after each signal of the
//! store, like a WatchRuns follower (`runtime/fanout/watch.rs`). It never
//! sends anything.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::Webhook;
use crate::domain::{EventPosition, Timestamp};
use crate::store::{NewDelivery, RunStore, StoreError};

/// Events read from the store at once.
const PAGE: usize = 256;
/// How soon a shared store is read again when events were still settling.
const SETTLE: Duration = Duration::from_millis(20);
/// How often a shared store is read again without a signal.
const RECHECK: Duration = Duration::from_secs(1);
/// How long a failed store call waits before the next.
const STORE_RETRY: Duration = Duration::from_secs(1);

pub(super) struct Enqueuer {
    pub(super) store: Arc<dyn RunStore>,
    pub(super) webhook: Arc<Webhook>,
    /// Told when deliveries were enqueued.
    pub(super) enqueued: Arc<Notify>,
    /// The stored cursor, read before the server served anything.
    pub(super) cursor: EventPosition,
}

/// What one read came to.
enum Step {
    /// The cursor moved here: read on.
    Moved(EventPosition),
    /// Another replica moved the cursor first.
    Lost,
    /// Nothing after the cursor (yet, when settling).
    CaughtUp { settling: bool },
}

impl Enqueuer {
    pub(super) async fn run(self) {
        let shared = self.store.sharing().is_shared();
        let mut signal = self.store.run_events_signal();
        signal.borrow_and_update();
        let mut cursor = Some(self.cursor);
        loop {
            let step = match cursor {
                None => self.start().await.map(Step::Moved),
                Some(position) => self.step(position).await,
            };
            let wait = match step {
                Ok(Step::Moved(position)) => {
                    cursor = Some(position);
                    continue;
                }
                Ok(Step::Lost) => {
                    // Read the stored cursor again.
                    cursor = None;
                    continue;
                }
                Ok(Step::CaughtUp { settling: true }) => SETTLE,
                Ok(Step::CaughtUp { settling: false }) if shared => RECHECK,
                Ok(Step::CaughtUp { settling: false }) => Duration::MAX,
                Err(error) => {
                    tracing::warn!(webhook = %self.webhook.name, %error, "webhook: could not enqueue deliveries");
                    STORE_RETRY
                }
            };
            tokio::select! {
                changed = signal.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = sleep(wait) => {}
            }
        }
    }

    async fn start(&self) -> Result<EventPosition, StoreError> {
        start(self.store.as_ref(), &self.webhook).await
    }

    async fn step(&self, cursor: EventPosition) -> Result<Step, StoreError> {
        let page = self
            .store
            .read_run_events(self.webhook.tenant.as_ref(), cursor, PAGE)
            .await?;
        let Some(last) = page.events.last().map(|event| event.position) else {
            return Ok(Step::CaughtUp {
                settling: page.settling,
            });
        };
        let deliveries: Vec<NewDelivery> = page
            .events
            .iter()
            .filter(|event| self.webhook.wants(event))
            .map(|event| NewDelivery {
                run_id: event.run_id,
                event: event.position,
            })
            .collect();
        let moved = self
            .store
            .enqueue_deliveries(&self.webhook.name, cursor, last, &deliveries, Timestamp::now())
            .await?;
        if !moved {
            return Ok(Step::Lost);
        }
        if !deliveries.is_empty() {
            self.enqueued.notify_one();
        }
        Ok(Step::Moved(last))
    }
}

/// `webhook`'s stored cursor; a webhook seen for the first time is stored
/// at the head of the events, so that it sends what happens from now on.
pub(super) async fn start(store: &dyn RunStore, webhook: &Webhook) -> Result<EventPosition, StoreError> {
    let head = store.run_events_head().await?;
    store.webhook_cursor(&webhook.name, head).await
}

/// Sleeps for `duration`, or forever for `Duration::MAX`.
pub(super) async fn sleep(duration: Duration) {
    match tokio::time::Instant::now().checked_add(duration) {
        Some(at) if duration != Duration::MAX => tokio::time::sleep_until(at).await,
        _ => std::future::pending().await,
    }
}
