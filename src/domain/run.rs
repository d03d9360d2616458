//! A run's durable record: its phase, with what only that phase has (the
//! lease of a running run, the calls a suspended run waits on, the text of
//! a completed one...), and its conversation so far. Each transition from
//! one phase to the next is one method here, which changes the record and
//! returns the chunks that tell the run's streams of it; the runtime stores
//! both in one write. Nothing here does I/O.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{
    Answer, Args, Chunk, FinishReason, Message, RunFailure, SuspendPayload, Tenant, ThreadId, Timestamp,
    ToolCall, ToolDefinition, ToolOutput, TraceContext, Usage,
};

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

/// Where a run is in its life, with what only that phase has: a running
/// run has a lease and no expiry, a suspended one has pending calls and an
/// expiry and no lease, only a completed one has a final text.
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
    /// Waiting for Resume on `pending` (never empty) until `expires_at`.
    Suspended {
        pending: Vec<PendingCall>,
        expires_at: Timestamp,
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
    /// The tenant that started the run: the only one that sees it.
    pub tenant: Tenant,
    pub agent_id: String,
    /// Bumped by every write: the store's compare-and-set guard.
    pub version: u64,
    /// The seq of the run's last stored event.
    pub last_seq: u64,
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
    pub phase: Phase,
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

/// What a valid answer to a pending call leads to.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolution {
    /// The call's result is ready.
    Output(ToolOutput),
    /// The call was approved: the tool runs now, with these arguments
    /// instead of the model's when a person edited them.
    Execute { edited_args: Option<Args> },
}

impl RunRecord {
    /// A new running run, held by `lease`, and its first chunk.
    pub fn start(
        id: RunId,
        tenant: Tenant,
        agent_id: String,
        options: RunOptions,
        state: RunState,
        lease: Lease,
        now: Timestamp,
    ) -> (Self, Chunk) {
        let start = Chunk::Start {
            agent_id: agent_id.clone(),
            resumed: false,
        };
        let run = Self {
            id,
            tenant,
            agent_id,
            version: 1,
            last_seq: 0,
            created_at: now,
            updated_at: now,
            request_id: None,
            metadata: BTreeMap::new(),
            options,
            run_tools: Vec::new(),
            thread: None,
            trace: None,
            state,
            phase: Phase::Running {
                lease,
                pending: Vec::new(),
            },
        };
        (run, start)
    }

    pub fn status(&self) -> RunStatus {
        self.phase.status()
    }

    /// The calls that wait for an answer: those of a suspension, or those
    /// of the last one still waiting while a running run continues.
    pub fn pending(&self) -> &[PendingCall] {
        match &self.phase {
            Phase::Suspended { pending, .. } | Phase::Running { pending, .. } => pending,
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

    /// Suspends a running run on `pending` (at least one call) for its
    /// options' time to live: a `tool_call_suspended` or
    /// `tool_call_approval` chunk per call, then `finish{SUSPENDED}`.
    pub fn suspend(&mut self, pending: Vec<PendingCall>, now: Timestamp) -> Vec<Chunk> {
        let expires_at = now.after(self.options.suspend_ttl);
        let mut chunks: Vec<Chunk> = pending
            .iter()
            .map(|waiting| {
                let call = waiting.call.clone();
                match &waiting.waiting {
                    Waiting::Suspended { payload } => Chunk::ToolCallSuspended {
                        call,
                        payload: payload.clone(),
                        expires_at: Some(expires_at),
                    },
                    Waiting::Approval => Chunk::ToolCallApproval { call },
                }
            })
            .collect();
        chunks.push(self.finish_chunk(FinishReason::Suspended, String::new()));
        self.updated_at = now;
        self.phase = Phase::Suspended { pending, expires_at };
        chunks
    }

    /// Answers the pending call at `index` of a suspended run with
    /// `record`'s answer, resolved as `resolution`, and gives the run to
    /// `lease`: the continuation's `start`, then the call's result if the
    /// answer is it. Returns the chunks, and the call to run now if the
    /// answer approved it. The other pending calls keep waiting. `None`,
    /// and nothing changed, unless the run is suspended.
    pub fn answer(
        &mut self,
        index: usize,
        record: AnswerRecord,
        request_id: Option<String>,
        resolution: Resolution,
        lease: Lease,
    ) -> Option<(Vec<Chunk>, Option<ToolCall>)> {
        let Phase::Suspended { pending, .. } = &mut self.phase else {
            return None;
        };
        let mut pending = std::mem::take(pending);
        let now = record.answered_at;
        let answered = pending.remove(index);
        let mut chunks = vec![Chunk::Start {
            agent_id: self.agent_id.clone(),
            resumed: true,
        }];
        if let Some(request_id) = request_id {
            self.state.resumes.push(ResumeRecord {
                request_id,
                tool_call_id: answered.call.id.clone(),
                answer: record.answer.clone(),
                first_seq: self.last_seq + 1,
            });
        }
        self.state.answers.push(record);
        let approved = match resolution {
            Resolution::Output(output) => {
                chunks.push(self.state.record_result(&answered.call, output));
                None
            }
            Resolution::Execute { edited_args: None } => Some(answered.call),
            Resolution::Execute {
                edited_args: Some(args),
            } => {
                let (call, original_args) = self.state.edit_call(answered.call, args);
                chunks.push(Chunk::ToolCall {
                    call: call.clone(),
                    original_args: Some(original_args),
                });
                Some(call)
            }
        };
        self.updated_at = now;
        self.phase = Phase::Running { lease, pending };
        Some((chunks, approved))
    }

    /// Gives a running run whose holder is gone to `lease`; the calls that
    /// still wait stay pending.
    pub fn take_over(&mut self, lease: Lease) {
        if let Phase::Running { lease: held, .. } = &mut self.phase {
            *held = lease;
        }
    }

    /// Moves a running run's lease expiry to `expires_at` (a renewal by its
    /// holder).
    pub fn renew_lease(&mut self, expires_at: Timestamp) {
        if let Phase::Running { lease, .. } = &mut self.phase {
            lease.expires_at = expires_at;
        }
    }

    /// Completes a running run (`reason` stop or max steps) with the text
    /// of its last step: `finish` with that text.
    pub fn complete(&mut self, reason: FinishReason, final_text: String, now: Timestamp) -> Vec<Chunk> {
        let finish = self.finish_chunk(reason, final_text.clone());
        self.updated_at = now;
        self.phase = Phase::Completed { final_text };
        vec![finish]
    }

    /// Fails a running run: `error`, then `finish{ERROR}`.
    pub fn fail(&mut self, failure: RunFailure, now: Timestamp) -> Vec<Chunk> {
        let chunks = vec![
            Chunk::Error(failure.clone()),
            self.finish_chunk(FinishReason::Error, String::new()),
        ];
        self.updated_at = now;
        self.phase = Phase::Failed { failure };
        chunks
    }

    /// Cancels a running or suspended run: each call still pending is
    /// answered as declined because the run was cancelled (after a
    /// `start` that opens the segment, for a suspended run), then
    /// `finish{CANCELLED}`.
    pub fn cancel(&mut self, reason: String, now: Timestamp) -> Vec<Chunk> {
        let mut chunks = Vec::new();
        if self.status() == RunStatus::Suspended {
            chunks.push(Chunk::Start {
                agent_id: self.agent_id.clone(),
                resumed: true,
            });
        }
        let why = if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        };
        let pending = match &mut self.phase {
            Phase::Suspended { pending, .. } | Phase::Running { pending, .. } => std::mem::take(pending),
            _ => Vec::new(),
        };
        for waiting in pending {
            let declined = ToolOutput::error(format!(
                "The run was cancelled before this call was answered{why}"
            ));
            chunks.push(self.state.record_result(&waiting.call, declined));
        }
        chunks.push(self.finish_chunk(FinishReason::Cancelled, String::new()));
        self.updated_at = now;
        self.phase = Phase::Cancelled { reason };
        chunks
    }

    /// Expires a suspended run nobody answered in time; it streams nothing
    /// (its last segment ended with the suspension's `finish`).
    pub fn expire(&mut self, now: Timestamp) -> Vec<Chunk> {
        self.updated_at = now;
        self.phase = Phase::Expired;
        Vec::new()
    }

    fn finish_chunk(&self, reason: FinishReason, text: String) -> Chunk {
        Chunk::Finish {
            reason,
            usage: self.state.usage,
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::{AskUserPayload, SelectionMode};

    const NOW: Timestamp = Timestamp(1_796_066_454_000_000);

    fn lease(owner: &str) -> Lease {
        Lease {
            owner: owner.into(),
            expires_at: NOW.after(Duration::from_secs(10)),
        }
    }

    fn running() -> RunRecord {
        let options = RunOptions {
            max_steps: 10,
            suspend_ttl: Duration::from_secs(60),
            ..RunOptions::default()
        };
        let (mut run, start) = RunRecord::start(
            RunId::new(),
            Tenant::default(),
            "assistant".into(),
            options,
            RunState::default(),
            lease("a"),
            NOW,
        );
        assert_eq!(
            start,
            Chunk::Start {
                agent_id: "assistant".into(),
                resumed: false
            }
        );
        run.last_seq = 4;
        run
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "ask_user".into(),
            args: json!({"question": "Which plan?"}).into(),
        }
    }

    fn question(id: &str) -> PendingCall {
        PendingCall {
            call: call(id),
            waiting: Waiting::Suspended {
                payload: SuspendPayload::AskUser(AskUserPayload {
                    question: "Which plan?".into(),
                    options: Vec::new(),
                    selection_mode: SelectionMode::FreeText,
                }),
            },
        }
    }

    fn answer(id: &str) -> AnswerRecord {
        AnswerRecord {
            tool_call_id: id.into(),
            answer: Answer::Text("Pro".into()),
            answered_at: NOW,
            answered_by: Tenant::default(),
            via: AnswerVia::Resume,
        }
    }

    fn suspended_on(ids: &[&str]) -> RunRecord {
        let mut run = running();
        run.suspend(ids.iter().map(|id| question(id)).collect(), NOW);
        run
    }

    #[test]
    fn a_suspension_announces_each_call_then_finishes() {
        let mut run = running();
        let approval = PendingCall {
            call: call("b"),
            waiting: Waiting::Approval,
        };
        let chunks = run.suspend(vec![question("a"), approval], NOW);
        let expires_at = NOW.after(Duration::from_secs(60));
        assert!(matches!(
            &chunks[0],
            Chunk::ToolCallSuspended { call, expires_at: Some(at), .. } if call.id == "a" && *at == expires_at
        ));
        assert!(matches!(&chunks[1], Chunk::ToolCallApproval { call } if call.id == "b"));
        assert!(matches!(
            &chunks[2],
            Chunk::Finish {
                reason: FinishReason::Suspended,
                ..
            }
        ));
        assert_eq!(chunks.len(), 3);
        assert_eq!(run.status(), RunStatus::Suspended);
        assert_eq!(run.expires_at(), Some(expires_at));
        assert_eq!(run.lease(), None, "a suspended run has no lease");
        assert_eq!(run.pending().len(), 2);
    }

    #[test]
    fn an_answer_gives_the_run_to_its_lease_and_keeps_the_other_calls_waiting() {
        let mut run = suspended_on(&["a", "b"]);
        let output = Resolution::Output(ToolOutput::ok("User answered: Pro"));
        let (chunks, approved) = run
            .answer(0, answer("a"), Some("req-1".into()), output, lease("b"))
            .expect("suspended");
        assert_eq!(approved, None);
        assert!(matches!(&chunks[0], Chunk::Start { resumed: true, .. }));
        assert!(matches!(&chunks[1], Chunk::ToolResult { tool_call_id, .. } if tool_call_id == "a"));
        assert_eq!(run.lease(), Some(&lease("b")));
        assert_eq!(run.expires_at(), None);
        assert_eq!(run.pending(), &[question("b")], "the other call still waits");
        assert_eq!(run.state.answers, vec![answer("a")]);
        assert_eq!(
            run.state.resumes[0].first_seq, 5,
            "the seq of the continuation's start"
        );
        assert!(
            matches!(run.state.messages.last(), Some(Message::Tool { tool_call_id, .. }) if tool_call_id == "a")
        );
    }

    #[test]
    fn an_approval_returns_the_call_to_run_and_records_no_result() {
        let mut run = running();
        let approval = PendingCall {
            call: call("a"),
            waiting: Waiting::Approval,
        };
        run.suspend(vec![approval], NOW);
        let execute = Resolution::Execute { edited_args: None };
        let (chunks, approved) = run
            .answer(0, answer("a"), None, execute, lease("a"))
            .expect("suspended");
        assert_eq!(approved, Some(call("a")));
        assert_eq!(chunks.len(), 1, "only the continuation's start");
        assert!(run.state.messages.is_empty());
        assert!(run.state.resumes.is_empty(), "no request id, no record of it");
        assert!(run.state.edited_calls.is_empty());
    }

    #[test]
    fn an_approval_with_edited_arguments_runs_them_and_keeps_the_models() {
        let mut run = running();
        run.state.messages.push(Message::Assistant {
            content: String::new(),
            tool_calls: vec![call("a"), call("b")],
        });
        let approval = |id: &str| PendingCall {
            call: call(id),
            waiting: Waiting::Approval,
        };
        run.suspend(vec![approval("a"), approval("b")], NOW);
        let edited: Args = json!({"question": "Which plan, really?"}).into();
        let execute = Resolution::Execute {
            edited_args: Some(edited.clone()),
        };
        let (chunks, approved) = run
            .answer(1, answer("b"), None, execute, lease("a"))
            .expect("suspended");
        let ran = ToolCall {
            args: edited.clone(),
            ..call("b")
        };
        assert_eq!(approved, Some(ran.clone()), "the tool runs the edited arguments");
        assert_eq!(
            chunks[1],
            Chunk::ToolCall {
                call: ran.clone(),
                original_args: Some(call("b").args),
            },
            "the continuation reports the call as it runs"
        );
        let Some(Message::Assistant { tool_calls, .. }) = run.state.messages.last() else {
            panic!("the model's message")
        };
        assert_eq!(tool_calls, &[call("a"), ran.clone()], "the model sees what ran");
        assert_eq!(
            run.state.edited_calls,
            vec![EditedCall {
                call: ran,
                original_args: call("b").args,
            }]
        );
        assert_eq!(run.pending(), &[approval("a")], "the other call still waits");
    }

    #[test]
    fn only_a_suspended_run_takes_an_answer() {
        let mut run = running();
        let before = run.clone();
        let output = Resolution::Output(ToolOutput::ok("x"));
        assert_eq!(run.answer(0, answer("a"), None, output, lease("b")), None);
        assert_eq!(run, before, "nothing changed");
    }

    #[test]
    fn cancelling_declines_what_waits_and_opens_a_segment_only_after_a_suspension() {
        let mut suspended = suspended_on(&["a"]);
        let chunks = suspended.cancel("no longer needed".into(), NOW);
        assert!(matches!(&chunks[0], Chunk::Start { resumed: true, .. }));
        assert!(matches!(
            &chunks[1],
            Chunk::ToolResult { tool_call_id, is_error: true, content, .. }
                if tool_call_id == "a" && content.ends_with(": no longer needed")
        ));
        assert!(matches!(
            &chunks[2],
            Chunk::Finish {
                reason: FinishReason::Cancelled,
                ..
            }
        ));
        assert_eq!(
            suspended.phase,
            Phase::Cancelled {
                reason: "no longer needed".into()
            }
        );
        assert!(suspended.pending().is_empty());

        let mut running = running();
        let chunks = running.cancel(String::new(), NOW);
        assert_eq!(chunks.len(), 1, "a running run's segment is open already");
        assert_eq!(running.lease(), None);
    }

    #[test]
    fn a_run_ends_in_the_phase_that_says_how() {
        let mut done = running();
        let chunks = done.complete(FinishReason::Stop, "Pro it is.".into(), NOW);
        assert!(
            matches!(&chunks[..], [Chunk::Finish { reason: FinishReason::Stop, text, .. }] if text == "Pro it is.")
        );
        assert_eq!(
            done.phase,
            Phase::Completed {
                final_text: "Pro it is.".into()
            }
        );

        let mut failed = running();
        let failure = RunFailure {
            code: "provider_error".into(),
            message: "boom".into(),
        };
        let chunks = failed.fail(failure.clone(), NOW);
        assert_eq!(chunks[0], Chunk::Error(failure.clone()));
        assert!(matches!(
            &chunks[1],
            Chunk::Finish {
                reason: FinishReason::Error,
                ..
            }
        ));
        assert_eq!(failed.phase, Phase::Failed { failure });

        let mut expired = suspended_on(&["a"]);
        assert!(!expired.expiry_due(NOW));
        assert!(expired.expiry_due(NOW.after(Duration::from_secs(60))));
        assert!(
            expired.expire(NOW).is_empty(),
            "the suspension's finish ended its segment"
        );
        assert_eq!(expired.phase, Phase::Expired);
        assert_eq!(expired.expires_at(), None);
    }

    #[test]
    fn leases_move_only_while_running() {
        let mut run = running();
        run.renew_lease(NOW.after(Duration::from_secs(30)));
        assert_eq!(
            run.lease().map(|l| l.expires_at),
            Some(NOW.after(Duration::from_secs(30)))
        );
        run.take_over(lease("b"));
        assert_eq!(run.lease(), Some(&lease("b")));

        let mut suspended = suspended_on(&["a"]);
        let before = suspended.clone();
        suspended.renew_lease(NOW);
        suspended.take_over(lease("b"));
        assert_eq!(suspended, before);
    }
}
