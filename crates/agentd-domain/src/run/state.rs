//! The part of a run that its execution reads and writes in every phase
//! (the conversation, steps, usage, and the record of its answers), and the
//! options and links fixed when it starts.

use std::ops::Range;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{
    Answer, Args, Chunk, Decision, Message, SuspendPayload, Tenant, ThreadId, Timestamp, ToolCall,
    ToolOutput, Usage,
};

use super::RunId;

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

/// The part of a run that the agent loop reads and writes, in every phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The conversation, tool calls and results included.
    pub messages: Vec<Message>,
    /// Model steps taken.
    pub steps: u32,
    /// Tokens used by every step.
    pub usage: Usage,
    /// Resumes that carried an idempotency key, so a retry replays instead
    /// of answering twice.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<ResumeRecord>,
    /// Every answer a suspended call of the run received, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<AnswerRecord>,
    /// The calls approved with edited arguments, in the order approved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edited_calls: Vec<EditedCall>,
    /// Who decided each call a person, a rule, a grant or the deadline
    /// decided, in the order decided.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<Decision>,
    /// The decisions (a range of `decisions`) that the run's latest
    /// change of status by an answer, a cancel or an expiry was made of:
    /// its run event carries them.
    #[serde(default, skip_serializing_if = "Range::is_empty")]
    pub changed_by: Range<usize>,
}

/// A call a person approved with edited arguments: the call as it ran
/// (and as the model's conversation has it), and the model's arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EditedCall {
    pub call: ToolCall,
    pub original_args: Args,
}

impl RunState {
    /// Gives `call` the arguments `args` a person edited, in the
    /// conversation too (so that the model sees the call as it ran), and
    /// records the edit. Returns the edited call and the model's arguments.
    pub fn edit_call(&mut self, call: ToolCall, args: Args) -> (ToolCall, Args) {
        let original_args = call.args.clone();
        let edited = ToolCall { args, ..call };
        let made = self.messages.iter_mut().rev().find_map(|message| match message {
            Message::Assistant { tool_calls, .. } => tool_calls.iter_mut().find(|made| made.id == edited.id),
            _ => None,
        });
        if let Some(made) = made {
            made.args = edited.args.clone();
        }
        self.edited_calls.push(EditedCall {
            call: edited.clone(),
            original_args: original_args.clone(),
        });
        (edited, original_args)
    }

    /// Records `decisions`, an answer's, as what the change of status
    /// being made now is made of (see [`RunState::changed_by`]).
    pub fn change_by(&mut self, decisions: impl IntoIterator<Item = Decision>) {
        let start = self.decisions.len();
        self.decisions.extend(decisions);
        self.changed_by = start..self.decisions.len();
    }

    /// Records `decisions`, a cancel's or the deadline's, as what the
    /// change being made now is made of too: after the answer's, which the
    /// same write may store (each event takes the decisions of its kind,
    /// see [`crate::RunEventKind::decisions`]).
    pub fn close_by(&mut self, decisions: impl IntoIterator<Item = Decision>) {
        let start = if self.changed_by.is_empty() {
            self.decisions.len()
        } else {
            self.changed_by.start
        };
        self.decisions.extend(decisions);
        self.changed_by = start..self.decisions.len();
    }

    /// The decisions of the latest changes of status made by an answer, a
    /// cancel or an expiry.
    pub fn change_decisions(&self) -> &[Decision] {
        self.decisions.get(self.changed_by.clone()).unwrap_or_default()
    }

    /// Adds a call's result to the conversation and returns the chunk that
    /// reports it.
    pub fn record_result(&mut self, call: &ToolCall, output: ToolOutput) -> Chunk {
        self.messages.push(Message::tool(
            &call.id,
            &call.name,
            output.content.clone(),
            output.is_error,
        ));
        Chunk::ToolResult {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: output.content,
            is_error: output.is_error,
        }
    }
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
    /// The suspension the tool goes on from with this answer (see
    /// [`Resolution::Proceed`]), kept so that a replica that takes the run
    /// over before the call ends goes on with it instead of calling again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proceeds_from: Option<SuspendPayload>,
}

/// How an answer reached a suspended call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerVia {
    /// A Resume call.
    Resume,
    /// A new message on the run's thread that asked for auto-resume.
    AutoResume,
    /// Nobody answered in time: the deadline did, as the tool's
    /// `on_expiry` says.
    Deadline,
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

/// What a valid answer to a pending call leads to.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// The call's result is ready.
    Output(ToolOutput),
    /// The call was approved: the tool runs now, with these arguments
    /// instead of the model's when a person edited them.
    Execute { edited_args: Option<Args> },
    /// The tool goes on with the answer (an MCP server that asked for
    /// input gets it): the call is not over, and may suspend again.
    Proceed,
}

/// One answer of a Resume, checked: the pending call it answers (its
/// index in the run's pending list), its record, and what it leads to.
#[derive(Clone, Debug, PartialEq)]
pub struct Answered {
    pub index: usize,
    pub record: AnswerRecord,
    pub resolution: Resolution,
    /// Who gave the answer, and what it decided.
    pub decision: Decision,
}

/// A call an execution takes up where a Resume (or a takeover) left it.
#[derive(Clone, Debug, PartialEq)]
pub enum Continuation {
    /// Run the call: it was approved and has not run.
    Run(ToolCall),
    /// Go on with the call after `answer` to its suspension on `payload`.
    Proceed {
        call: ToolCall,
        payload: SuspendPayload,
        answer: Answer,
    },
}

impl Continuation {
    pub fn call(&self) -> &ToolCall {
        match self {
            Continuation::Run(call) | Continuation::Proceed { call, .. } => call,
        }
    }
}
