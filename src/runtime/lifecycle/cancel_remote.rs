//! CancelRun of a run that another replica executes: this replica asks the
//! holder of the run's lease, through the store's feed, to cancel it there
//! (so that the in-flight step stops at once and the holder's clients see
//! the cancellation), and waits a bounded time for the run to leave
//! RUNNING. If the holder does not answer in time (it may be gone), CancelRun
//! cancels the run in the store instead, which fences the holder.

use std::time::Duration;

use tokio::time::Instant;

use crate::domain::{RunRecord, RunStatus, Timestamp};
use crate::runtime::execution::lease_expired;
use crate::runtime::Runtime;
use crate::store::{FeedMessage, Sharing};

/// How long CancelRun waits for the holder to stop the run.
const OWNER_WAIT: Duration = Duration::from_secs(5);
/// How often it looks meanwhile.
const POLL: Duration = Duration::from_millis(20);

impl Runtime {
    /// Whether another replica holds a live lease on `run` and the shared
    /// store's feed can reach it.
    pub(super) fn owner_may_stop(&self, run: &RunRecord) -> bool {
        self.inner.store.presence.sharing().is_shared() && !lease_expired(run, Timestamp::now())
    }

    /// Asks the holder to cancel `run` and waits (bounded) until the store
    /// shows it no longer running.
    pub(super) async fn ask_owner_to_cancel(&self, run: &RunRecord, reason: &str) {
        let Sharing::Shared(feed) = self.inner.store.presence.sharing() else {
            return;
        };
        let message = FeedMessage::CancelRequested {
            run_id: run.id,
            reason: reason.to_owned(),
        };
        if let Err(error) = feed.publish(&message).await {
            tracing::warn!(%error, "could not ask the run's holder to cancel it");
            return;
        }
        let deadline = Instant::now() + OWNER_WAIT;
        while Instant::now() < deadline {
            tokio::time::sleep(POLL).await;
            match self.inner.store.runs.load_run(run.id).await {
                Ok(now) if now.status() == RunStatus::Running => {}
                Ok(_) => return,
                Err(error) => {
                    tracing::warn!(%error, "could not read the run while waiting for its cancellation");
                    return;
                }
            }
        }
        tracing::warn!("the run's holder did not cancel it in time; cancelling it in the store");
    }
}
