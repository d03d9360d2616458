//! Where a run is in its life, with what only that phase has: the lease of
//! a running run, the calls a suspended run waits on (never none), the text
//! of a completed one.

use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{RunFailure, SuspendPayload, Timestamp, ToolCall};

use super::RunStatus;

/// Where a run is in its life, with what only that phase has: a running
/// run has a lease and no expiry, a suspended one has pending calls and an
/// expiry and no lease, only a completed one has a final text. Changed only
/// by the transitions of [`super::RunRecord`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Executing on the replica that holds `lease`.
    Running {
        lease: Lease,
        /// Calls of the last suspension that still wait for an answer,
        /// after a Resume answered another: the run suspends on them again
        /// once the answered call has run. Empty otherwise.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pending: Vec<PendingCall>,
    },
    /// Waiting for Resume on `pending` until `expires_at`, reminding at
    /// `reminders` (those still to come, in order; see
    /// [`crate::WaitPolicies::reminders`]), the last time at
    /// `reminded_at`.
    Suspended {
        pending: PendingCalls,
        expires_at: Timestamp,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        reminders: Vec<Timestamp>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reminded_at: Option<Timestamp>,
    },
    /// The model stopped, or the run took its last step.
    Completed {
        final_text: String,
    },
    Failed {
        failure: RunFailure,
    },
    /// Cancelled by CancelRun, or by its client leaving (`reason` says which;
    /// it may be empty).
    Cancelled {
        reason: String,
    },
    /// Nobody answered a suspension in time.
    Expired,
}

impl Phase {
    pub fn status(&self) -> RunStatus {
        match self {
            Phase::Running { .. } => RunStatus::Running,
            Phase::Suspended { .. } => RunStatus::Suspended,
            Phase::Completed { .. } => RunStatus::Completed,
            Phase::Failed { .. } => RunStatus::Failed,
            Phase::Cancelled { .. } => RunStatus::Cancelled,
            Phase::Expired => RunStatus::Expired,
        }
    }
}

/// What a pending call waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Waiting {
    /// The tool suspended itself with this payload.
    Suspended { payload: SuspendPayload },
    /// The tool has not run yet: it needs approval first.
    Approval,
}

/// A tool call of a suspended run that waits for Resume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    pub call: ToolCall,
    pub waiting: Waiting,
    /// When the call started waiting: set by the suspension that first
    /// waits on it (kept by the later ones while it is still pending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
}

/// The calls a suspended run waits on: at least one. Reads as a slice;
/// stored as a list, and a stored empty list does not read back.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingCalls(Vec<PendingCall>);

impl PendingCalls {
    /// `calls`, unless there are none.
    pub fn new(calls: Vec<PendingCall>) -> Option<Self> {
        (!calls.is_empty()).then_some(Self(calls))
    }

    /// One call.
    pub fn one(call: PendingCall) -> Self {
        Self(vec![call])
    }

    pub fn into_vec(self) -> Vec<PendingCall> {
        self.0
    }
}

impl Deref for PendingCalls {
    type Target = [PendingCall];

    fn deref(&self) -> &[PendingCall] {
        &self.0
    }
}

impl Serialize for PendingCalls {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for PendingCalls {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let calls = Vec::<PendingCall>::deserialize(deserializer)?;
        Self::new(calls).ok_or_else(|| serde::de::Error::custom("a suspended run waits on at least one call"))
    }
}

/// A replica's claim to execute a running run: renewed while it executes;
/// once `expires_at` has passed, any replica may take the run over (with a
/// version compare-and-set) and continue it from its last committed step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The replica id of the holder.
    pub owner: String,
    pub expires_at: Timestamp,
}

impl Lease {
    /// The lease of a running run stored before leases existed: held by
    /// nobody, expired at the earliest time there is, so that recovery
    /// takes the run over before any other.
    pub fn vacant() -> Self {
        Self {
            owner: String::new(),
            expires_at: Timestamp(i64::MIN),
        }
    }
}
