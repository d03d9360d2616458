//! The events of a run as the domain sees them. `Chunk` is what happened;
//! `Event` is a chunk with its place (`seq`) and time in the run's life. The
//! proto `AgentChunk` mirrors `Event`; this module knows nothing of it.

use serde::{Deserialize, Serialize};

use super::Timestamp;
use super::{Args, SuspendPayload, ToolCall};

/// Token counts of a step or a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

/// Why a stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Suspended,
    MaxSteps,
    Cancelled,
    Error,
}

/// A failure inside a run, as streamed and stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunFailure {
    /// Stable machine-readable code, e.g. `provider_error`.
    pub code: String,
    pub message: String,
}

/// Something that happened in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Chunk {
    Start {
        agent_id: String,
        resumed: bool,
    },
    StepStart {
        step: u32,
    },
    TextDelta {
        text: String,
    },
    ToolCall {
        call: ToolCall,
        /// The model's arguments, when a person approved the call with
        /// edited ones (then `call.args` are those): the call is reported
        /// again as it runs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        original_args: Option<Args>,
    },
    ToolResult {
        tool_call_id: String,
        tool_name: String,
        content: String,
        is_error: bool,
    },
    ToolCallSuspended {
        call: ToolCall,
        payload: SuspendPayload,
        expires_at: Option<Timestamp>,
    },
    ToolCallApproval {
        call: ToolCall,
    },
    StepFinish {
        step: u32,
        usage: Usage,
    },
    Finish {
        reason: FinishReason,
        usage: Usage,
        text: String,
    },
    Error(RunFailure),
}

/// A chunk at its place in a run's life: `seq` starts at 1 and rises by
/// exactly one across every stream of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    pub time: Timestamp,
    pub chunk: Chunk,
}
