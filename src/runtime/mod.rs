//! The runtime starts, resumes and reads runs. It owns every state change of
//! a run and persists each one through the [`RunStore`] before the client can
//! depend on it. It knows nothing of gRPC.

mod drive;
mod emitter;
mod error;
mod resume;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tracing::instrument;

pub use emitter::Emitter;
pub use error::RuntimeError;
pub use resume::ResumeRun;

use crate::agent::{AgentRegistry, Message};
use crate::chunk::{Chunk, Event};
use crate::run::{RunId, RunOptions, RunRecord, RunState, RunStatus};
use crate::store::{RunStore, StoreError};
use crate::time::Timestamp;
use crate::tools::{ToolContext, ToolOutcome, ToolOutput};

/// Settings of the runtime.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// How long a suspended run waits for an answer before it expires.
    pub suspend_ttl: Duration,
    /// Chunks buffered per client stream before the run waits for the client.
    pub stream_buffer: usize,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            suspend_ttl: Duration::from_secs(7 * 24 * 3600),
            stream_buffer: 256,
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
}

/// The chunks of one stream of a run, from `start` to `finish`.
pub struct RunStream {
    pub run_id: RunId,
    pub events: mpsc::Receiver<Event>,
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
}

impl Runtime {
    pub fn new(agents: AgentRegistry, store: Arc<dyn RunStore>, config: RuntimeConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                agents,
                store,
                config,
            }),
        }
    }

    pub fn agents(&self) -> &AgentRegistry {
        &self.inner.agents
    }

    pub fn store(&self) -> &Arc<dyn RunStore> {
        &self.inner.store
    }

    /// Starts a run: stores it, then streams it from a task of its own until
    /// it suspends or finishes. The run goes on if the stream is dropped.
    #[instrument(skip_all, fields(agent = %request.agent_id, run_id = tracing::field::Empty))]
    pub async fn start(&self, request: StartRun) -> Result<RunStream, RuntimeError> {
        let agent = self
            .inner
            .agents
            .get(&request.agent_id)
            .ok_or_else(|| RuntimeError::AgentNotFound(request.agent_id.clone()))?
            .clone();
        if request.messages.is_empty() {
            return Err(RuntimeError::InvalidRequest {
                field: "messages",
                reason: "a run needs at least one message".into(),
            });
        }
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
        let now = Timestamp::now();
        let run = RunRecord {
            id: RunId::new(),
            agent_id: agent.id.clone(),
            status: RunStatus::Running,
            version: 1,
            last_seq: 0,
            created_at: now,
            updated_at: now,
            expires_at: None,
            request_id: request.request_id,
            metadata: request.metadata,
            options: RunOptions {
                max_steps: if request.max_steps == 0 {
                    agent.max_steps
                } else {
                    request.max_steps
                },
                require_tool_approval: request.require_tool_approval,
                cancel_on_disconnect: request.cancel_on_disconnect,
                suspend_ttl: request
                    .suspend_ttl
                    .or(agent.suspend_ttl)
                    .unwrap_or(self.inner.config.suspend_ttl),
            },
            state,
        };
        tracing::Span::current().record("run_id", tracing::field::display(run.id));

        let (client, events) = mpsc::channel(self.inner.config.stream_buffer);
        let mut emitter = Emitter::new(0, client);
        emitter.hold(Chunk::Start {
            agent_id: agent.id.clone(),
            resumed: false,
        });
        let mut run = run;
        run.last_seq = emitter.last_seq();
        match self.inner.store.create_run(&run, emitter.unstored()).await {
            Ok(()) => {}
            Err(StoreError::AlreadyExists) => {
                return Err(RuntimeError::DuplicateRequest(run.request_id.unwrap_or_default()))
            }
            Err(other) => return Err(other.into()),
        }
        emitter.committed().await;

        let run_id = run.id;
        let execution = drive::Execution::new(Arc::clone(&self.inner), agent, run, emitter);
        tokio::spawn(execution.run_steps());
        Ok(RunStream { run_id, events })
    }

    /// Reads a run (a suspended run past its time to live reads as expired).
    #[instrument(skip_all, fields(run_id = %id))]
    pub async fn get_run(&self, id: RunId) -> Result<RunRecord, RuntimeError> {
        let run = self.inner.store.load_run(id).await?;
        self.inner.expire_if_due(run).await
    }

    /// Runs one tool outside any run: no suspension is available, so a tool
    /// such as ask_user answers with its fallback text.
    #[instrument(skip_all, fields(agent = %agent_id, tool = %tool_name))]
    pub async fn execute_tool(
        &self,
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

impl Inner {
    /// Marks a suspended run whose time to live has passed as expired.
    async fn expire_if_due(&self, mut run: RunRecord) -> Result<RunRecord, RuntimeError> {
        let due = run.status == RunStatus::Suspended
            && run.expires_at.is_some_and(|expires| expires <= Timestamp::now());
        if !due {
            return Ok(run);
        }
        let expected = run.version;
        run.version += 1;
        run.status = RunStatus::Expired;
        run.updated_at = Timestamp::now();
        match self.store.commit(&run, expected, &[]).await {
            Ok(()) => Ok(run),
            // Somebody else moved it first (a Resume, or another expiry):
            // what they stored is the truth.
            Err(StoreError::VersionConflict { .. }) => Ok(self.store.load_run(run.id).await?),
            Err(other) => Err(other.into()),
        }
    }
}
