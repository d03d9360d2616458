//! Conversation threads: the runs a tenant started with one client-chosen
//! thread id, in order. A thread is plain data here (its id, when it began
//! and changed, its latest run); each run keeps only its own messages and a
//! link to the run before it, and the runtime assembles a thread's history
//! from its runs. Nothing here does I/O.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Tenant;
use super::Timestamp;
use super::{RunId, RunStatus};

/// The longest thread id.
pub const MAX_THREAD_ID_LEN: usize = 128;

/// A thread id as a client chose it: 1 to 128 characters from
/// `[A-Za-z0-9._:-]`. Unique per tenant only.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ThreadId(String);

/// A thread id that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{shown} is not a valid thread id: use 1 to {MAX_THREAD_ID_LEN} characters from A-Z, a-z, 0-9, '.', '_', ':' and '-'"
)]
pub struct InvalidThreadId {
    shown: String,
}

impl ThreadId {
    /// A thread id from the client's string, checked.
    pub fn new(id: &str) -> Result<Self, InvalidThreadId> {
        let valid = !id.is_empty()
            && id.len() <= MAX_THREAD_ID_LEN
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
        if valid {
            Ok(Self(id.to_owned()))
        } else {
            Err(InvalidThreadId {
                shown: format!("{:?}", super::clip(id.to_owned(), 160)),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A thread as the store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadRecord {
    pub tenant: Tenant,
    pub id: ThreadId,
    /// When its first run was created.
    pub created_at: Timestamp,
    /// When its latest run was created.
    pub updated_at: Timestamp,
    /// Its latest run: the compare-and-set guard of "one run at a time".
    pub latest_run: RunId,
    /// The latest run's status and last change, as read with the thread
    /// (ignored on writes); `None` if that run is gone.
    pub latest: Option<LatestRun>,
}

/// What a thread read tells of its latest run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatestRun {
    pub status: RunStatus,
    pub updated_at: Timestamp,
}

impl ThreadRecord {
    /// When the thread last changed: a run started, or its latest run moved.
    pub fn last_activity(&self) -> Timestamp {
        self.latest
            .map_or(self.updated_at, |latest| latest.updated_at.max(self.updated_at))
    }
}

/// Where a page of threads starts: below this (created_at, id) pair.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadCursor {
    pub created_at: Timestamp,
    pub id: ThreadId,
}

/// A page of a tenant's threads, newest first (by `created_at`, then id,
/// both descending).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadQuery {
    pub tenant: Tenant,
    /// Only threads ordered after this one (the last of the previous page).
    pub after: Option<ThreadCursor>,
    /// The most threads returned.
    pub limit: usize,
}

impl ThreadQuery {
    /// Whether `thread` belongs on a page of this query (not the limit).
    pub fn matches(&self, thread: &ThreadRecord) -> bool {
        thread.tenant == self.tenant
            && self
                .after
                .as_ref()
                .is_none_or(|after| (thread.created_at, &thread.id) < (after.created_at, &after.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_are_checked() {
        for good in ["a", "support:42", "user-1.chat_2", &"x".repeat(128)] {
            assert!(ThreadId::new(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "a/b", "é", "a\n", &"x".repeat(129)] {
            assert!(ThreadId::new(bad).is_err(), "{bad:?}");
        }
    }
}
