//! A run's durable record: its phase, with what only that phase has
//! (`phase.rs`), the state its execution reads and writes in every phase
//! (`state.rs`), and where it stands in its store (its version and the seq
//! of its last chunk). Each transition from one phase to the next is one
//! method (`transitions.rs`) that checks the phase it starts from, changes
//! the record and returns the chunks that tell the run's streams of it;
//! the runtime stores both in one commit, which [`RunRecord::stage`] or
//! [`RunRecord::commit_after`] prepares: the only ways a run's version and
//! last seq move. Nothing here does I/O.

mod phase;
mod state;
mod transitions;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Tenant, Timestamp, ToolDefinition, TraceContext};

pub use phase::{Lease, PendingCall, PendingCalls, Phase, Waiting};
pub use state::{
    AnswerRecord, AnswerVia, Answered, Continuation, EditedCall, Resolution, ResumeRecord, RunOptions,
    RunState, ThreadLink,
};
pub use transitions::{Staged, WrongPhase};

/// A run's id: a UUIDv7, so ids sort by creation time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RunId(pub Uuid);

impl RunId {
    /// A fresh, time-ordered id.
    pub fn new() -> Self {
        Self(Uuid::now_v7())
    }
}

impl Default for RunId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for RunId {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::try_parse(s).map(Self)
    }
}

/// Where a run is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Suspended,
    Completed,
    Failed,
    Cancelled,
    Expired,
}

impl RunStatus {
    /// Every status, for parsing and listing.
    pub const ALL: [RunStatus; 6] = [
        RunStatus::Running,
        RunStatus::Suspended,
        RunStatus::Completed,
        RunStatus::Failed,
        RunStatus::Cancelled,
        RunStatus::Expired,
    ];

    /// The lowercase name used in messages and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Suspended => "suspended",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Expired => "expired",
        }
    }

    /// Parses [`RunStatus::as_str`] back.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a run stands in its store: the version of its last write (the
/// compare-and-set guard of the next) and the seq of its last stored chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub version: u64,
    pub last_seq: u64,
}

impl Position {
    /// Where an append of chunks up to `last_seq` (`None`: no chunks, a
    /// lease renewal) leaves a run that stood here (see
    /// `RunStore::append_events`).
    pub fn after_append(self, last_seq: Option<u64>) -> Self {
        Self {
            version: self.version + 1,
            last_seq: last_seq.unwrap_or(self.last_seq),
        }
    }
}

/// A run as the store keeps it. Its phase, version and last seq are read
/// through methods and changed only by its transitions and their commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: RunId,
    /// The tenant that started the run: the only one that sees it.
    pub tenant: Tenant,
    pub agent_id: String,
    /// Moved by every write: the store's compare-and-set guard.
    version: u64,
    /// The seq of the run's last stored event.
    last_seq: u64,
    pub created_at: Timestamp,
    /// When the run last changed phase or took a step.
    pub updated_at: Timestamp,
    /// The idempotency key of the StreamAgent that started it.
    pub request_id: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub options: RunOptions,
    /// Client-executed tools the request that started the run declared;
    /// kept so that every later step (after a Resume or a restart) has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_tools: Vec<ToolDefinition>,
    /// The conversation thread the run belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadLink>,
    /// The trace context of the request that started the run, which the
    /// executions after a Resume or a takeover link to (runs stored
    /// before it was kept have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceContext>,
    pub state: RunState,
    phase: Phase,
}

/// A run record laid out field by field, every field open: for a store
/// that reads records written in an earlier layout, and for tests that
/// store records as they please. The runtime changes runs through their
/// transitions only.
#[derive(Clone, Debug, PartialEq)]
pub struct RunParts {
    pub id: RunId,
    pub tenant: Tenant,
    pub agent_id: String,
    pub version: u64,
    pub last_seq: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub request_id: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub options: RunOptions,
    pub run_tools: Vec<ToolDefinition>,
    pub thread: Option<ThreadLink>,
    pub trace: Option<TraceContext>,
    pub state: RunState,
    pub phase: Phase,
}

/// A record and its parts, both ways, field by field: the patterns name
/// every field, so a field added to one and not the other fails to compile.
macro_rules! parts {
    ($($field:ident),* $(,)?) => {
        impl From<RunParts> for RunRecord {
            fn from(RunParts { $($field),* }: RunParts) -> Self {
                Self { $($field),* }
            }
        }

        impl From<RunRecord> for RunParts {
            fn from(RunRecord { $($field),* }: RunRecord) -> Self {
                Self { $($field),* }
            }
        }
    };
}

parts!(
    id, tenant, agent_id, version, last_seq, created_at, updated_at, request_id, metadata, options,
    run_tools, thread, trace, state, phase,
);

impl RunRecord {
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    pub fn status(&self) -> RunStatus {
        self.phase.status()
    }

    /// The version of the run's last write.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The seq of the run's last stored chunk.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    pub fn position(&self) -> Position {
        Position {
            version: self.version,
            last_seq: self.last_seq,
        }
    }

    /// The calls that wait for an answer: those of a suspension, or those
    /// of the last one still waiting while a running run continues.
    pub fn pending(&self) -> &[PendingCall] {
        match &self.phase {
            Phase::Suspended { pending, .. } => pending,
            Phase::Running { pending, .. } => pending,
            _ => &[],
        }
    }

    /// When a suspended run expires; `None` in every other phase.
    pub fn expires_at(&self) -> Option<Timestamp> {
        match &self.phase {
            Phase::Suspended { expires_at, .. } => Some(*expires_at),
            _ => None,
        }
    }

    /// When a suspended run next needs the sweep: its next reminder, or
    /// its expiry; `None` in every other phase. Stores index runs by it.
    pub fn wakes_at(&self) -> Option<Timestamp> {
        match &self.phase {
            Phase::Suspended {
                expires_at,
                reminders,
                ..
            } => Some(
                reminders
                    .first()
                    .map_or(*expires_at, |next| (*next).min(*expires_at)),
            ),
            _ => None,
        }
    }

    /// Whether a suspended run has a reminder due at `now`.
    pub fn reminder_due(&self, now: Timestamp) -> bool {
        matches!(&self.phase, Phase::Suspended { reminders, .. } if reminders.first().is_some_and(|at| *at <= now))
    }

    /// When a suspended run last reminded; `None` if it has not (or is not
    /// suspended).
    pub fn reminded_at(&self) -> Option<Timestamp> {
        match &self.phase {
            Phase::Suspended { reminded_at, .. } => *reminded_at,
            _ => None,
        }
    }

    /// The lease of a running run; `None` in every other phase.
    pub fn lease(&self) -> Option<&Lease> {
        match &self.phase {
            Phase::Running { lease, .. } => Some(lease),
            _ => None,
        }
    }

    /// Whether a suspended run's time to live has passed at `now`.
    pub fn expiry_due(&self, now: Timestamp) -> bool {
        self.expires_at().is_some_and(|expires| expires <= now)
    }

    /// The record as its store holds it: `self` is the record of the run's
    /// last commit, and appends since (see `RunStore::append_events`)
    /// moved its version and last seq to `position` and, for a running run,
    /// its lease's expiry to `lease_expires_at`. For stores reading a run
    /// back; the runtime moves runs through transitions and their commits.
    pub fn restore(&mut self, position: Position, lease_expires_at: Option<Timestamp>) {
        self.version = position.version;
        self.last_seq = position.last_seq;
        if let (Phase::Running { lease, .. }, Some(at)) = (&mut self.phase, lease_expires_at) {
            lease.expires_at = at;
        }
    }
}
