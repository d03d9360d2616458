//! The domain: the plain data every other module speaks in, and nothing
//! else. Ids and tenants, the conversation, tool calls with their suspend
//! payloads and answers, the chunks a run streams, the run record with its
//! phase and the transitions between phases, and the W3C trace context a
//! run carries. It depends on no other module of the crate, so that the
//! store, the model providers, the agent loop and the runtime all depend on
//! it and never on one another for their data.

mod args;
mod chunk;
mod decision;
mod grant;
mod message;
mod question;
mod redact;
mod run;
mod run_event;
mod suspend;
mod tenant;
mod text;
mod thread;
mod time;
mod tool;
mod trace;
mod waiting;

pub use args::Args;
pub use chunk::{Chunk, Event, FinishReason, RunFailure, Usage};
pub use decision::{Decider, Decision, DecisionOutcome, DecisionSource, DEADLINE};
pub use grant::{Grant, GrantScope, Remember};
pub use message::Message;
pub use question::{unknown_key, APPROVAL_KEYS, ELICITATION_RESPONSE_KEYS};
pub use redact::{redact, Redacted};
pub use run::{
    AnswerRecord, AnswerVia, Answered, Continuation, EditedCall, Lease, PendingCall, PendingCalls, Phase,
    Position, Resolution, ResumeRecord, RunId, RunOptions, RunParts, RunRecord, RunState, RunStatus, Staged,
    ThreadLink, Waiting, WrongPhase,
};
pub use run_event::{EventCursor, EventPosition, MalformedCursor, RunEvent, RunEventKind};
pub use suspend::{
    Answer, AnswerError, AskUserOption, AskUserPayload, Elicitation, ElicitationAction, ElicitationRequest,
    ElicitationResponse, SelectionMode, SuspendPayload, DECLINED_TO_ANSWER,
};
pub use tenant::{InvalidTenant, Tenant, MAX_TENANT_ID_LEN};
pub use text::clip;
pub use thread::{
    InvalidThreadId, LatestRun, ThreadCursor, ThreadId, ThreadQuery, ThreadRecord, MAX_THREAD_ID_LEN,
};
pub use time::Timestamp;
pub use tool::any_object;
pub use tool::{ToolCall, ToolDefinition, ToolOutput, ToolSpec};
pub use trace::{
    InvalidTraceparent, InvalidTracestate, SpanId, TraceContext, TraceId, TraceState, MAX_TRACESTATE_LEN,
    MAX_TRACESTATE_MEMBERS,
};
pub use waiting::{OnExpiry, WaitPolicies, WaitPolicy, NOT_ANSWERED_IN_TIME};
