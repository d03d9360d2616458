//! The bridge from a shared store's feed into this process's live runs: a
//! chunk another replica stored reaches the subscribers here as if it had
//! been stored here, an announcement without its chunks (or a feed that
//! reconnected) makes them read the store, and a cancel request reaches the
//! execution it is for. With a store that one process owns there is no
//! feed, and the live runs alone carry every chunk.

use std::sync::{Arc, Weak};

use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;

use super::live::Signal;
use crate::runtime::Inner;
use crate::store::{FeedItem, FeedMessage, Sharing};

impl Inner {
    /// Starts the bridge, if the store is shared (and so has a feed).
    /// Subscribes before it returns, so nothing sent after this call is
    /// missed. The task ends once every handle of this runtime is dropped;
    /// abort it to stop it sooner.
    pub(in crate::runtime) fn bridge_feed(self: &Arc<Self>) -> Option<JoinHandle<()>> {
        let Sharing::Shared(feed) = self.store.presence.sharing() else {
            return None;
        };
        let mut items = feed.subscribe();
        let inner: Weak<Inner> = Arc::downgrade(self);
        Some(tokio::spawn(async move {
            loop {
                let item = items.recv().await;
                let Some(inner) = inner.upgrade() else { return };
                match item {
                    Ok(FeedItem::Message(message)) => inner.on_feed_message(message),
                    Ok(FeedItem::Resync) | Err(RecvError::Lagged(_)) => {
                        for live in inner.live.all() {
                            live.broadcast(Signal::Recheck);
                        }
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        }))
    }
}

impl Inner {
    fn on_feed_message(&self, message: FeedMessage) {
        let Some(live) = self.live.get(message.run_id()) else {
            // Nobody here follows or executes the run.
            return;
        };
        match message {
            FeedMessage::Changed {
                events: Some(events), ..
            } if !events.is_empty() => live.release_stored(events),
            FeedMessage::Changed { .. } => live.broadcast(Signal::Recheck),
            FeedMessage::CancelRequested { reason, .. } => {
                if live.is_executing() {
                    live.request_cancel(reason);
                }
            }
        }
    }
}
