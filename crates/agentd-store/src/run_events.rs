//! The run events as the store keeps them: one for every change of a run's
//! status (see [`agentd_domain::RunEvent`]), stored in the write that made
//! the change, in an order every reader agrees on. `WatchRuns` and the
//! delivery ledgers follow them.

use async_trait::async_trait;

use super::StoreError;
use agentd_domain::{EventPosition, RunEvent, Tenant};

/// A read of the run events (see [`RunEventLog::read_run_events`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunEventPage {
    /// In position order.
    pub events: Vec<RunEvent>,
    /// Events after these are stored already but cannot be read in order
    /// yet (a shared store whose concurrent writes are still committing):
    /// read again shortly, whether or not the signal changes.
    pub settling: bool,
}

/// The log of run events. A write that changes a run's stored status (or
/// creates the run) stores its event (kind from
/// [`agentd_domain::RunEventKind::of_change`]) in the same atomic write, at
/// a position after every event a read has returned. A run's events go
/// with it ([`super::ThreadStore::delete_thread`]).
#[async_trait]
pub trait RunEventLog: Send + Sync + 'static {
    /// The run events after position `after` (`EventPosition::default()`:
    /// from the first), in position order, at most `limit` of them:
    /// `tenant`'s, or every tenant's with `None`. Every reader sees the
    /// events in the same order, and an event appears only once every event
    /// before it can be read too, so that a reader that continues after the
    /// last event it read misses none.
    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError>;

    /// The position of the newest run event a read returns now
    /// (`EventPosition::default()` without any): where following the events
    /// "from now on" starts.
    async fn run_events_head(&self) -> Result<EventPosition, StoreError>;

    /// Marked changed after each write of this process that stored a run
    /// event and, on a shared store, whenever the feed tells of another
    /// server's write or may have missed one: a follower of the events
    /// reads again then.
    fn run_events_signal(&self) -> tokio::sync::watch::Receiver<()>;
}
