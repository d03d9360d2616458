//! The runtime starts, resumes and reads runs. It owns every state change of
//! a run and persists each one through the [`RunStore`] before the client can
//! depend on it. It knows nothing of gRPC.

mod error;
mod execution;
mod fanout;
mod lifecycle;
mod periodic;
mod reads;
mod store_layer;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::instrument;

pub use error::RuntimeError;
pub use execution::{new_replica_id, Emitter, LeaseSettings, Staging};
use execution::{with_run_tools, Work};
use fanout::{LiveRuns, Wanted};
pub use fanout::{MapEvents, RunStream};
pub use lifecycle::ResumeRun;
use lifecycle::Turn;
pub use reads::{ListRuns, ListThreads, RunPage, ThreadPage, ThreadView, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

use crate::agent::{Agent, AgentRegistry};
use crate::domain::{
    AnswerVia, Chunk, Lease, Message, RunId, RunOptions, RunRecord, RunState, Tenant, ThreadId, ThreadLink,
    Timestamp, ToolDefinition, ToolOutput,
};
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::store::{RunStore, StoreError};
use crate::tools::{ToolContext, ToolOutcome};

/// Settings of the runtime.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// How long a suspended run waits for an answer before it expires.
    pub suspend_ttl: Duration,
    /// Deliveries (each the chunks of one stored write, or a replayed page)
    /// buffered per client stream before its follower waits for the client;
    /// the run itself never waits for a client.
    pub stream_buffer: usize,
    /// How often the expiry sweep looks for suspended runs past their time
    /// to live (see `Runtime::spawn_expiry_sweeper`); zero disables it.
    pub sweep_interval: Duration,
    /// How often the server checks that the store answers, for its health
    /// status; zero disables the check.
    pub health_check_interval: Duration,
    /// How this replica holds leases on the runs it executes and finds
    /// runs whose holder is gone.
    pub lease: LeaseSettings,
    /// This replica's id, the owner of its leases: unique among the
    /// replicas sharing a store (a fresh UUID by default).
    pub replica_id: String,
    /// Where the runtime counts what happens (see [`crate::metrics`]).
    pub metrics: Metrics,
    /// Hard limits on requests and runs (`[limits]`).
    pub limits: Limits,
    /// Threads idle for longer than this are deleted with their runs by
    /// the sweep (`[threads] retention`); `None` keeps them.
    pub thread_retention: Option<Duration>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            suspend_ttl: Duration::from_secs(7 * 24 * 3600),
            stream_buffer: 256,
            sweep_interval: Duration::from_secs(30),
            health_check_interval: Duration::from_secs(5),
            lease: LeaseSettings::default(),
            replica_id: new_replica_id(),
            metrics: Metrics::default(),
            limits: Limits::default(),
            thread_retention: None,
        }
    }
}

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
}

/// Starts, resumes and reads runs.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    agents: AgentRegistry,
    store: Arc<dyn RunStore>,
    config: RuntimeConfig,
    live: LiveRuns,
    /// Stops every write once the server has shut down (see
    /// `store_layer.rs`, the layer `store` is behind).
    fence: store_layer::Fence,
    /// Runs executing here, per tenant (see `execution/tenant_runs.rs`).
    tenant_runs: Arc<execution::TenantRuns>,
}

impl Runtime {
    pub fn new(agents: AgentRegistry, store: Arc<dyn RunStore>, config: RuntimeConfig) -> Self {
        let live = LiveRuns::default();
        let (store, fence) = store_layer::StoreLayer::wrap(store, config.metrics.clone());
        Self {
            inner: Arc::new(Inner {
                agents,
                store,
                config,
                live,
                fence,
                tenant_runs: Arc::default(),
            }),
        }
    }

    /// The limits requests and runs are held to.
    pub fn limits(&self) -> &Limits {
        &self.inner.config.limits
    }

    /// For shutdown only: from now on this runtime changes no run in the
    /// store (writes wait forever), so that the runs still executing here
    /// stay as last committed, RUNNING, for another process to take over.
    pub fn fence(&self) {
        self.inner.fence.raise();
    }

    pub fn agents(&self) -> &AgentRegistry {
        &self.inner.agents
    }

    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.inner.store
    }

    /// What this runtime counts and times.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.config.metrics
    }

    /// How often the server checks the store's health.
    pub fn health_check_interval(&self) -> Duration {
        self.inner.config.health_check_interval
    }

    /// Resolves once a write of this runtime was refused by the store
    /// (unavailable, or full) since the last call: for the health watch,
    /// which checks the store then instead of at its next tick.
    pub async fn write_refused(&self) {
        self.inner.fence.write_refused().await;
    }

    /// Runs executing in this process right now.
    pub fn executing_runs(&self) -> usize {
        self.inner.live.executing()
    }

    /// Starts a run and streams it from a task of its own until it suspends
    /// or finishes; the run is stored, with its `start` chunk and this
    /// replica's lease, before anything is streamed, so that a store that
    /// refuses it is a refused request, a retry finds it, and a racing
    /// start on the thread is refused. The run goes on if the stream is dropped
    /// (unless it asked to be cancelled then). A `request_id` that
    /// `tenant` started a run with before gets that run's stream, replayed
    /// then live, instead. The run belongs to `tenant`.
    ///
    /// With a `thread_id`, the run is the thread's next (see `lifecycle/threads.rs`):
    /// refused while the thread's latest run is running or suspended,
    /// unless `auto_resume` answers that run's question, which streams its
    /// continuation instead.
    pub async fn start(&self, tenant: &Tenant, request: StartRun) -> Result<RunStream, RuntimeError> {
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
                    let answer = self.resume_via(tenant, resume, Some(run), AnswerVia::AutoResume);
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
        let slot = self
            .inner
            .tenant_runs
            .acquire(tenant, limits.max_concurrent_runs_per_tenant)?;
        let thread_id = request.thread_id.clone();
        let lease = self.inner.new_lease();
        let (mut run, start) = new_run(tenant, &agent, request, lease, &self.inner.config);
        run.thread = thread_id.clone().map(|id| ThreadLink { id, previous });
        let mut first = Staging::after(0);
        first.push(start);
        run.last_seq = first.last_seq;
        match self.inner.store.create_run(&run, &first.events).await {
            Ok(()) => self.inner.config.metrics.run_started(&run.agent_id),
            // A retry racing its original: follow the run that won.
            Err(StoreError::AlreadyExists) if run.request_id.is_some() => {
                let request_id = run.request_id.unwrap_or_default();
                let existing = self
                    .inner
                    .store
                    .find_run_by_request_id(tenant, &request_id)
                    .await?;
                let existing = existing.ok_or(RuntimeError::DuplicateRequest(request_id))?;
                return self
                    .follow(tenant, existing, Wanted::Segment { first_seq: 1 })
                    .await;
            }
            // Another start on the thread won the race.
            Err(StoreError::ThreadMoved) => {
                return Err(match &thread_id {
                    Some(thread_id) => Box::pin(self.thread_taken(tenant, thread_id)).await,
                    None => StoreError::ThreadMoved.into(),
                });
            }
            Err(other) => return Err(other.into()),
        }

        Ok(self.execute(agent, run, first.events, Work::Steps, slot))
    }

    /// Reads a run of `tenant` (a suspended run past its time to live reads
    /// as expired); another tenant's run is not found.
    #[instrument(skip_all, fields(%tenant, run_id = %id))]
    pub async fn get_run(&self, tenant: &Tenant, id: RunId) -> Result<RunRecord, RuntimeError> {
        let mut run = self.inner.load_run_of(tenant, id).await?;
        self.inner.expire_if_due(&mut run).await?;
        Ok(run)
    }

    /// Runs one tool outside any run, for `tenant`: no suspension is
    /// available, so a tool such as ask_user answers with its fallback text.
    #[instrument(skip_all, fields(%tenant, agent = %agent_id, tool = %tool_name))]
    pub async fn execute_tool(
        &self,
        tenant: &Tenant,
        agent_id: &str,
        tool_name: &str,
        args: &Value,
    ) -> Result<ToolOutput, RuntimeError> {
        let agent = self
            .inner
            .agents
            .get(agent_id)
            .ok_or_else(|| RuntimeError::AgentNotFound(agent_id.to_owned()))?;
        if !agent.tool_specs().any(|spec| spec.name == tool_name) {
            return Err(RuntimeError::ToolNotFound {
                agent: agent.id.clone(),
                tool: tool_name.to_owned(),
            });
        }
        Ok(
            match agent.call_tool(tool_name, args, ToolContext::STANDALONE).await {
                ToolOutcome::Done(output) => output,
                ToolOutcome::Suspend(_) => ToolOutput::error(format!(
                    "{tool_name} needs a run to suspend in and has no answer outside one"
                )),
            },
        )
    }
}

/// A new run of `agent` for `tenant` as `request` asks, held by `lease`,
/// and its first chunk; not yet stored.
fn new_run(
    tenant: &Tenant,
    agent: &Agent,
    request: StartRun,
    lease: Lease,
    config: &RuntimeConfig,
) -> (RunRecord, Chunk) {
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
    let (mut run, start) = RunRecord::start(
        RunId::new(),
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
    (run, start)
}

impl Inner {
    /// Reads a run of `tenant`: another tenant's run is not found, exactly
    /// as a run that does not exist.
    pub(in crate::runtime) async fn load_run_of(
        &self,
        tenant: &Tenant,
        id: RunId,
    ) -> Result<RunRecord, RuntimeError> {
        let run = self.store.load_run(id).await?;
        if run.tenant != *tenant {
            return Err(RuntimeError::RunNotFound);
        }
        Ok(run)
    }

    /// Marks a suspended run whose time to live has passed as expired (`run`
    /// becomes what the store holds then).
    pub(in crate::runtime) async fn expire_if_due(&self, run: &mut RunRecord) -> Result<(), RuntimeError> {
        if !run.expiry_due(Timestamp::now()) {
            return Ok(());
        }
        // Rare: boxed, so that the future of every caller stays small.
        Box::pin(self.store_expiry(run)).await
    }

    /// Stores a suspended run past its time to live as expired.
    async fn store_expiry(&self, run: &mut RunRecord) -> Result<(), RuntimeError> {
        let expected = run.version;
        let suspended_since = run.updated_at;
        let mut staging = Staging::after(run.last_seq);
        staging.extend(run.expire(Timestamp::now()));
        run.version += 1;
        run.last_seq = staging.last_seq;
        match self.store.commit(run, expected, &staging.events).await {
            Ok(()) => {
                tracing::info!(run_id = %run.id, "suspended run expired");
                self.config.metrics.run_expired(&run.agent_id, suspended_since);
                if let Some(live) = self.live.get(run.id) {
                    live.close();
                }
                Ok(())
            }
            // Somebody else moved it first (a Resume, or another expiry):
            // what they stored is the truth.
            Err(StoreError::VersionConflict { .. }) => {
                *run = self.store.load_run(run.id).await?;
                Ok(())
            }
            Err(other) => Err(other.into()),
        }
    }
}
