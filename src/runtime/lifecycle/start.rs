//! Start: a new run, executed here at once and stored at its first durable
//! point (its suspension or finish, a tool with side effects, or a
//! deadline), before any of its chunks is released. A retried start (the same
//! `request_id`) follows the run it started instead, and a start on a
//! thread is the thread's next run or, with auto-resume, the answer to its
//! latest run's question (see `thread_turn.rs`).

use std::collections::BTreeMap;
use std::time::Duration;

use super::thread_turn::Turn;
use crate::agent::Agent;
use crate::domain::{
    Decider, Lease, Message, RunId, RunOptions, RunRecord, RunState, Staged, Tenant, ThreadId, ThreadLink,
    Timestamp, ToolDefinition, TraceContext,
};
use crate::runtime::execution::{with_run_tools, Begin, Work};
use crate::runtime::fanout::Wanted;
use crate::runtime::{RunStream, Runtime, RuntimeConfig, RuntimeError};
use crate::store::StoreError;

/// A request to start a run.
#[derive(Clone, Debug, Default)]
pub struct StartRun {
    /// Empty selects the default agent.
    pub agent_id: String,
    /// The conversation to start from; at least one message.
    pub messages: Vec<Message>,
    /// Zero takes the agent's default.
    pub max_steps: u32,
    pub require_tool_approval: bool,
    pub cancel_on_disconnect: bool,
    /// How long a suspension waits; `None` takes the agent's or server's.
    pub suspend_ttl: Option<Duration>,
    pub metadata: BTreeMap<String, String>,
    pub request_id: Option<String>,
    /// Client-executed tools for this run only, added to the agent's.
    pub tools: Vec<ToolDefinition>,
    /// The thread the run continues (its history first, then `messages`).
    pub thread_id: Option<ThreadId>,
    /// With `thread_id`: when the thread's latest run is suspended on an
    /// ask_user question, the last user message answers it instead.
    pub auto_resume: bool,
    /// The W3C trace context the request came with: the run's execution
    /// continues its trace, and the run keeps it for later ones to link to.
    pub trace: Option<TraceContext>,
    /// The new run's id, chosen ahead by the caller (to store what goes
    /// with the run before it runs); `None` takes a new one.
    pub run_id: Option<RunId>,
    /// Who starts it: with `auto_resume`, the decider of the question the
    /// message answers (through the thread). `None`: nobody named.
    pub decider: Option<Decider>,
}

impl Runtime {
    /// Starts a run and streams it from a task of its own until it suspends
    /// or finishes; the run is stored (at its first durable point, with
    /// every chunk so far) before anything is streamed, so that a store
    /// that refuses it is a refused request, a retry finds it, and a racing
    /// start on the thread is refused. The run goes on if the stream is dropped
    /// (unless it asked to be cancelled then). A `request_id` that
    /// `tenant` started a run with before gets that run's stream, replayed
    /// then live, instead. The run belongs to `tenant`.
    ///
    /// With a `thread_id`, the run is the thread's next (see `thread_turn.rs`):
    /// refused while the thread's latest run is running or suspended,
    /// unless `auto_resume` answers that run's question, which streams its
    /// continuation instead.
    pub(in crate::runtime) async fn start_run(
        &self,
        tenant: &Tenant,
        request: StartRun,
    ) -> Result<RunStream, RuntimeError> {
        let agent = self
            .inner
            .agents
            .get(&request.agent_id)
            .ok_or_else(|| RuntimeError::AgentNotFound(request.agent_id.clone()))?
            .clone();
        let agent = with_run_tools(agent, &request.tools)?;
        if request.messages.is_empty() {
            return Err(RuntimeError::InvalidRequest {
                field: "messages",
                reason: "a run needs at least one message".into(),
            });
        }
        let limits = &self.inner.config.limits;
        limits.check_conversation("messages", request.messages.iter().map(Message::content))?;
        limits.check_max_steps(request.max_steps)?;
        if let Some(request_id) = &request.request_id {
            if let Some(existing) = self
                .inner
                .store
                .runs
                .find_run_by_request_id(tenant, request_id)
                .await?
            {
                return self
                    .follow(tenant, existing, Wanted::Segment { first_seq: 1 })
                    .await;
            }
        }
        let mut previous = None;
        if let Some(thread_id) = &request.thread_id {
            match Box::pin(self.thread_turn(tenant, thread_id, &request)).await? {
                Turn::Start(after) => previous = after,
                Turn::Answer { resume, run } => {
                    let answer = self.resume_loaded(tenant, resume, Some(run));
                    return Box::pin(answer).await;
                }
                Turn::Replay { run_id, first_seq } => {
                    return self.follow(tenant, run_id, Wanted::Segment { first_seq }).await
                }
            }
        } else if request.auto_resume {
            return Err(RuntimeError::InvalidRequest {
                field: "auto_resume",
                reason: "auto_resume answers the question of a thread's latest run: give a thread_id".into(),
            });
        }
        let slot = self.inner.run_slot(tenant)?;
        let thread_id = request.thread_id.clone();
        let lease = self.inner.new_lease();
        let (mut run, first) = new_run(tenant, &agent, request, lease, &self.inner.config);
        run.thread = thread_id.clone().map(|id| ThreadLink { id, previous });
        let request_id = run.request_id.clone();
        let trace = run.trace.clone();
        // Written at its first durable point (see `execution/emitter.rs`):
        // a refusal of that write comes back here before any chunk.
        let started = self
            .execute(agent, run, first.events, Work::Steps, slot, trace, Begin::Start)
            .await;
        match started {
            Ok(stream) => Ok(stream),
            // A retry racing its original: follow the run that won.
            Err(StoreError::AlreadyExists) if request_id.is_some() => {
                let request_id = request_id.unwrap_or_default();
                let existing = self
                    .inner
                    .store
                    .runs
                    .find_run_by_request_id(tenant, &request_id)
                    .await?;
                let existing = existing.ok_or(RuntimeError::DuplicateRequest(request_id))?;
                self.follow(tenant, existing, Wanted::Segment { first_seq: 1 })
                    .await
            }
            // Another start on the thread won the race.
            Err(StoreError::ThreadMoved) => Err(match &thread_id {
                Some(thread_id) => Box::pin(self.thread_taken(tenant, thread_id)).await,
                None => StoreError::ThreadMoved.into(),
            }),
            Err(other) => Err(other.into()),
        }
    }
}

/// A new run of `agent` for `tenant` as `request` asks, held by `lease`,
/// and its first commit; not yet stored.
fn new_run(
    tenant: &Tenant,
    agent: &Agent,
    request: StartRun,
    lease: Lease,
    config: &RuntimeConfig,
) -> (RunRecord, Staged) {
    let mut state = RunState::default();
    let has_system = request
        .messages
        .iter()
        .any(|m| matches!(m, Message::System { .. }));
    if let (Some(instructions), false) = (&agent.instructions, has_system) {
        state.messages.push(Message::System {
            content: instructions.clone(),
        });
    }
    state.messages.extend(request.messages);
    let options = RunOptions {
        max_steps: if request.max_steps == 0 {
            agent.max_steps.min(config.limits.max_steps_per_run)
        } else {
            request.max_steps
        },
        require_tool_approval: request.require_tool_approval,
        cancel_on_disconnect: request.cancel_on_disconnect,
        suspend_ttl: request
            .suspend_ttl
            .or(agent.suspend_ttl)
            .unwrap_or(config.suspend_ttl),
    };
    let (mut run, first) = RunRecord::start(
        request.run_id.unwrap_or_default(),
        tenant.clone(),
        agent.id.clone(),
        options,
        state,
        lease,
        Timestamp::now(),
    );
    run.request_id = request.request_id;
    run.metadata = request.metadata;
    run.run_tools = request.tools;
    run.trace = request.trace;
    (run, first)
}
