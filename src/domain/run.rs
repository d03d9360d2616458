//! A run's durable record: its status, its conversation so far and the tool
//! calls it waits on. Everything here is plain data that the store keeps;
//! the transitions live in `runtime/`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::Message;
use super::Tenant;
use super::ThreadId;
use super::Timestamp;
use super::{Answer, SuspendPayload, ToolCall, ToolDefinition};
use super::{RunFailure, Usage};

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
}

/// Options fixed when the run starts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunOptions {
    /// Maximum number of model steps of the whole run.
    pub max_steps: u32,
    /// Every tool call other than ask_user waits for approval first.
    pub require_tool_approval: bool,
    /// Cancel the run when the client drops its stream.
    pub cancel_on_disconnect: bool,
    /// How long each suspension waits for an answer before the run expires.
    pub suspend_ttl: Duration,
}

/// The part of a run that the agent loop reads and writes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The conversation, tool calls and results included.
    pub messages: Vec<Message>,
    /// Calls waiting for Resume (only while suspended).
    pub pending: Vec<PendingCall>,
    /// Model steps taken.
    pub steps: u32,
    /// Tokens used by every step.
    pub usage: Usage,
    /// The text of the last step once the run has finished.
    pub final_text: String,
    /// Why a failed run failed.
    pub failure: Option<RunFailure>,
    /// Why a cancelled run was cancelled.
    #[serde(default)]
    pub cancel_reason: Option<String>,
    /// Resumes that carried an idempotency key, so a retry replays instead
    /// of answering twice.
    #[serde(default)]
    pub resumes: Vec<ResumeRecord>,
    /// Every answer a suspended call of the run received, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<AnswerRecord>,
}

/// An answer a suspended call received: what, when, from whom and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    pub tool_call_id: String,
    pub answer: Answer,
    pub answered_at: Timestamp,
    /// The tenant whose request answered.
    pub answered_by: Tenant,
    pub via: AnswerVia,
}

/// How an answer reached a suspended call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerVia {
    /// A Resume call.
    Resume,
    /// A new message on the run's thread that asked for auto-resume.
    AutoResume,
}

/// The thread a run belongs to, and the run before it in that thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadLink {
    pub id: ThreadId,
    /// The thread's latest run when this one started; `None` for the first.
    pub previous: Option<RunId>,
}

/// A Resume that carried a `request_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResumeRecord {
    pub request_id: String,
    pub tool_call_id: String,
    pub answer: Answer,
    /// The seq of the `start` chunk of the continuation it started.
    pub first_seq: u64,
}

/// A run as the store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: RunId,
    /// The tenant that started the run: the only one that sees it. Runs
    /// stored before tenants existed belong to the default tenant.
    #[serde(default)]
    pub tenant: Tenant,
    pub agent_id: String,
    pub status: RunStatus,
    /// Bumped by every write: the store's compare-and-set guard.
    pub version: u64,
    /// The seq of the run's last stored event.
    pub last_seq: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When a suspended run expires.
    pub expires_at: Option<Timestamp>,
    /// The idempotency key of the StreamAgent that started it.
    pub request_id: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub options: RunOptions,
    pub state: RunState,
    /// Client-executed tools the request that started the run declared;
    /// kept so that every later step (after a Resume or a restart) has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_tools: Vec<ToolDefinition>,
    /// Held by the replica executing a running run; `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// The conversation thread the run belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadLink>,
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
