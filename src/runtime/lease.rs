//! Leases: the replica executing a running run holds a lease on it (owner
//! and expiry, stored with the run) and renews it with every write it makes
//! and at least every `renew_every` while it executes. A lease that nobody
//! renewed for `ttl` means its holder is gone: any replica may then take the
//! run over (see `recovery.rs`).

use std::time::Duration;

use crate::run::{Lease, RunRecord, RunState};
use crate::time::Timestamp;
use crate::tools::ToolCall;

/// How leases are held and how orphaned runs are found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseSettings {
    /// How long a lease holds without renewal; a replica that stops
    /// renewing (a crash, a partition from the store) loses its runs to
    /// another replica after this long.
    pub ttl: Duration,
    /// How often an executing replica renews its leases when it has no
    /// other write to make; well below `ttl`.
    pub renew_every: Duration,
    /// How often each replica looks for running runs whose lease expired;
    /// zero disables the search (leases are then only taken over at
    /// startup, for a store that one process owns).
    pub recovery_interval: Duration,
}

impl Default for LeaseSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(10),
            renew_every: Duration::from_secs(2),
            recovery_interval: Duration::from_secs(2),
        }
    }
}

impl LeaseSettings {
    /// A lease for `owner` from now.
    pub(crate) fn lease(&self, owner: &str) -> Lease {
        Lease {
            owner: owner.to_owned(),
            expires_at: self.expiry(),
        }
    }

    /// When a lease renewed now expires.
    pub(crate) fn expiry(&self) -> Timestamp {
        Timestamp::now().after(self.ttl)
    }
}

/// A fresh replica id: unique per process, time-ordered.
pub fn new_replica_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Approved calls that a Resume claimed but that never ran: calls of the
/// last model step with neither a result nor a pending entry. Empty for any
/// run that is not right after such a claim.
pub(crate) fn approved_unexecuted(state: &RunState) -> Vec<ToolCall> {
    use crate::agent::Message;
    let Some(calls) = state.messages.iter().rev().find_map(|message| match message {
        Message::Assistant { tool_calls, .. } => Some(tool_calls),
        _ => None,
    }) else {
        return Vec::new();
    };
    let answered = |id: &str| {
        state.messages.iter().any(|message| {
            matches!(message, Message::Tool { tool_call_id, .. } if tool_call_id == id)
        })
    };
    let pending = |id: &str| state.pending.iter().any(|p| p.call.id == id);
    calls
        .iter()
        .filter(|call| !answered(&call.id) && !pending(&call.id))
        .cloned()
        .collect()
}

/// Whether `run`'s lease has expired at `now` (a running run without a
/// lease counts as expired).
pub(crate) fn lease_expired(run: &RunRecord, now: Timestamp) -> bool {
    run.lease.as_ref().is_none_or(|lease| lease.expires_at <= now)
}
