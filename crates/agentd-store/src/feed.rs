//! The feed of a shared store: how a server hears what other servers did to
//! runs, as they do it (PostgreSQL LISTEN/NOTIFY). Plain messages and one
//! trait; what a server does with them is the runtime's business. A store
//! that one process owns has no feed.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::StoreError;
use agentd_domain::{Event, RunId, RunStatus};

/// What one server tells the others about a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FeedMessage {
    /// A write was committed: the run's status and last seq after it, and
    /// the events it stored when they fit in one notification (`None`
    /// means "read them from the store").
    Changed {
        run_id: RunId,
        status: RunStatus,
        last_seq: u64,
        events: Option<Vec<Event>>,
    },
    /// CancelRun reached a server that does not execute the run: the one
    /// that does should stop it.
    CancelRequested { run_id: RunId, reason: String },
}

impl FeedMessage {
    pub fn run_id(&self) -> RunId {
        match self {
            FeedMessage::Changed { run_id, .. } | FeedMessage::CancelRequested { run_id, .. } => *run_id,
        }
    }
}

/// What a feed subscriber receives.
#[derive(Clone, Debug, PartialEq)]
pub enum FeedItem {
    /// Another server's message.
    Message(FeedMessage),
    /// Messages may have been missed (the feed reconnected, or this
    /// subscriber fell behind): whoever follows a run should read the store.
    Resync,
}

/// The changes other servers make to a shared store. Messages this process
/// sent are not delivered back to it.
#[async_trait]
pub trait RunFeed: Send + Sync + 'static {
    /// Every message from now on.
    fn subscribe(&self) -> broadcast::Receiver<FeedItem>;

    /// Sends a message to every other server.
    async fn publish(&self, message: &FeedMessage) -> Result<(), StoreError>;
}

/// Whether other processes change a store's runs too: a property every
/// store states ([`super::Presence::sharing`]), fixed for its life. A
/// shared store cannot lack its feed.
#[derive(Clone)]
pub enum Sharing {
    /// One process owns the store (an embedded file, memory): every change
    /// to its runs happens in this process.
    Owned,
    /// Several servers share the store; the feed carries what the others
    /// do to its runs.
    Shared(Arc<dyn RunFeed>),
}

impl Sharing {
    pub fn is_shared(&self) -> bool {
        matches!(self, Sharing::Shared(_))
    }
}

impl std::fmt::Debug for Sharing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sharing::Owned => "Owned",
            Sharing::Shared(_) => "Shared",
        })
    }
}
