//! Drives a run from where it stands to its next suspension or finish, one
//! agent step at a time, committing each step (state and events together)
//! before going on (a run not written yet is written by its first commit,
//! or before a tool with side effects runs: see `emitter.rs`). A step can be cut short by CancelRun, by the run moving
//! on elsewhere (fenced: see `emitter.rs`) or, when the run asks for it, by
//! its client going away. One function per transition.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tracing::Instrument;

use super::emitter::FirstWriteDue;
use super::Emitter;
use crate::agent::{Agent, RuleRun, StepEnd};
use crate::domain::{
    Chunk, Continuation, FinishReason, Grant, PendingCalls, RunFailure, RunRecord, Timestamp, WrongPhase,
};
use crate::runtime::fanout::{Delivery, Interruption, LiveRun, Refusal};
use crate::runtime::grants::Granted;
use crate::runtime::{lifecycle_log, Inner};
use crate::store::StoreError;
use crate::tools::ToolContext;

/// A run being executed by this process. While it exists, the run's live
/// entry says so.
pub(super) struct Execution {
    inner: Arc<Inner>,
    agent: Arc<Agent>,
    run: RunRecord,
    emitter: Emitter,
    /// The history of the run's thread, read at the first step.
    earlier: Option<Vec<crate::domain::Message>>,
    /// Grants the Resume that gave this execution the run made, which its
    /// caller stores once the claim is (see `Work::Continue`).
    granted: Vec<Grant>,
}

/// Why a step did not run to its end.
enum Interrupted {
    /// Fenced (another writer moved the run: this execution must not
    /// write), or cancelled.
    Live(Interruption),
    ClientLeft,
}

/// Why an execution stopped before it stored its run's next suspension or
/// finish.
enum Halt {
    /// The store refused a write, or the run moved on elsewhere (see
    /// `Execution::settle`).
    Store(StoreError),
    /// The run left RUNNING under its execution: a transition found it in
    /// another phase, and nothing was written.
    Phase(WrongPhase),
}

impl From<StoreError> for Halt {
    fn from(error: StoreError) -> Self {
        Halt::Store(error)
    }
}

impl From<WrongPhase> for Halt {
    fn from(wrong: WrongPhase) -> Self {
        Halt::Phase(wrong)
    }
}

/// Resolves at the first write's deadline, if there is one to wait for.
async fn passed(due: &Option<FirstWriteDue>) {
    match due {
        Some(due) => due.passed().await,
        None => std::future::pending().await,
    }
}

/// Resolves when the client's stream is gone (at once if there is none).
async fn client_gone(client: Option<mpsc::Sender<Delivery>>) {
    if let Some(client) = client {
        client.closed().await;
    }
}

impl Execution {
    pub(super) fn new(inner: Arc<Inner>, agent: Arc<Agent>, run: RunRecord, emitter: Emitter) -> Self {
        Self {
            inner,
            agent,
            run,
            emitter,
            earlier: None,
            granted: Vec::new(),
        }
    }

    fn live(&self) -> Arc<LiveRun> {
        Arc::clone(self.emitter.live())
    }

    /// Steps until the run suspends or finishes.
    pub(super) async fn run_steps(mut self) {
        let outcome = self.step_loop().await;
        self.settle(outcome).await;
    }

    /// Continues after a Resume claimed a suspension (or after a takeover):
    /// runs the calls that were approved and have not run yet and goes on
    /// with those whose tool takes up an answer, then suspends again while
    /// calls are pending, or steps on.
    pub(super) async fn continue_after_resume(
        mut self,
        continuations: Vec<Continuation>,
        grants: Vec<Grant>,
    ) {
        self.granted = grants;
        let outcome = self.continue_with(continuations).await;
        self.settle(outcome).await;
    }

    async fn continue_with(&mut self, continuations: Vec<Continuation>) -> Result<(), Halt> {
        let mut pending = self.run.take_still_pending()?;
        for continuation in continuations {
            let call = continuation.call().clone();
            if self.agent.has_side_effects(&call.name) {
                self.emitter.write_unwritten().await?;
            }
            let span = tracing::info_span!("tool_call", tool_call_id = %call.id, tool = %call.name);
            let ctx = ToolContext::IN_RUN;
            let outcome = match &continuation {
                Continuation::Run(call) => {
                    self.agent
                        .call_tool(&call.name, &call.args, ctx)
                        .instrument(span)
                        .await
                }
                Continuation::Proceed {
                    call,
                    payload,
                    answer,
                } => {
                    self.agent
                        .proceed(call, payload, answer, ctx)
                        .instrument(span)
                        .await
                }
            };
            let suspended = self
                .agent
                .record_outcome(&mut self.run.state, call, outcome, &mut self.emitter)
                .await;
            pending.extend(suspended);
        }
        match PendingCalls::new(pending) {
            None => self.step_loop().await,
            Some(pending) => self.suspend(pending).await,
        }
    }

    /// Ends the execution. Nothing unstored was ever released, so an
    /// execution whose write failed just stops, and its streams go on as
    /// the run does: a run that moved on elsewhere (taken over, cancelled
    /// in the store) goes on there, and its client follows it; a run the
    /// store refused stays RUNNING with a lease that expires, for recovery
    /// (here or on another replica) to continue from its last stored step
    /// once the store accepts writes, and its streams here end with an
    /// `error` and a `finish` that say so (see `stream::Refusal`).
    /// A run that left RUNNING under its execution (a transition refused
    /// by its phase) is left as stored, as one that moved on is.
    async fn settle(&mut self, outcome: Result<(), Halt>) {
        if let Err(halt) = outcome {
            match self.refusal(halt).await {
                // Stopped before its run was ever written: nobody saw
                // anything, and the request that gave it the run is
                // refused instead.
                Some(error) if self.emitter.stop_unwritten(error.clone()).await => {}
                None => {
                    tracing::info!("the run moved on elsewhere; this execution stopped");
                    self.emitter.hand_over_client();
                }
                Some(error) => {
                    tracing::error!(%error, "the store refused the run; its streams here end, and recovery continues it");
                    self.emitter.end_streams(Refusal {
                        error: error.to_string(),
                        usage: self.run.state.usage,
                    });
                }
            }
        }
        self.emitter.release_hold();
        self.inner.live.release(self.run.id);
    }

    /// The store's refusal that halted the execution, if that is what did;
    /// `None` if the run moved on elsewhere or left RUNNING under it.
    async fn refusal(&self, halt: Halt) -> Option<StoreError> {
        match halt {
            // Fenced: by the run moving on, or by the flusher, which the
            // store refused for a whole lease.
            Halt::Store(StoreError::VersionConflict { .. } | StoreError::Superseded) => {
                self.emitter.refusal().await
            }
            Halt::Store(StoreError::NotFound) => None,
            Halt::Store(error) => Some(error),
            Halt::Phase(wrong) => {
                tracing::error!(%wrong, "the run left RUNNING under its execution");
                None
            }
        }
    }

    async fn step_loop(&mut self) -> Result<(), Halt> {
        let earlier = match self.earlier.take() {
            Some(earlier) => earlier,
            None => self.inner.thread_history(&self.run).await?,
        };
        let outcome = self.steps(&earlier).await;
        self.earlier = Some(earlier);
        outcome
    }

    async fn steps(&mut self, earlier: &[crate::domain::Message]) -> Result<(), Halt> {
        loop {
            if self.run.state.steps >= self.run.options.max_steps {
                return self.complete(FinishReason::MaxSteps, String::new()).await;
            }
            let live = self.live();
            let client = self.emitter.client();
            let watch_client = self.run.options.cancel_on_disconnect;
            let started = Instant::now();
            let mut due = self.emitter.first_write_due();
            let step = {
                let run = RuleRun {
                    agent_id: &self.run.agent_id,
                    thread_id: self.run.thread.as_ref().map_or("", |thread| thread.id.as_str()),
                    metadata: &self.run.metadata,
                };
                let step = self.agent.step(
                    &mut self.run.state,
                    &self.run.options,
                    run,
                    earlier,
                    &mut self.emitter,
                );
                let (interrupted, gone) = (live.interrupted(), client_gone(client));
                tokio::pin!(step, interrupted, gone);
                loop {
                    tokio::select! {
                        biased;
                        interruption = &mut interrupted => break Err(Interrupted::Live(interruption)),
                        () = &mut gone, if watch_client => break Err(Interrupted::ClientLeft),
                        step = &mut step => break Ok(step),
                        // A slow step has its run written meanwhile, and
                        // goes on.
                        () = passed(&due), if due.is_some() => {
                            if let Some(due) = due.take() {
                                due.write();
                            }
                        }
                    }
                }
            };
            if let Ok(Ok(_)) = &step {
                let metrics = &self.inner.config.metrics;
                metrics.model_step(&self.run.agent_id, started.elapsed());
            }
            match step {
                Ok(Ok(StepEnd::ToolsDone)) => self.commit(Vec::new()).await?,
                Ok(Ok(StepEnd::Stopped { final_text })) => {
                    return self.complete(FinishReason::Stop, final_text).await
                }
                Ok(Ok(StepEnd::Suspended(pending))) => match self.grant(pending).await? {
                    Some(pending) => return self.suspend(pending).await,
                    // Grants approved every call that waited: step on.
                    None => self.commit(Vec::new()).await?,
                },
                Ok(Err(model_error)) => {
                    let failure = RunFailure {
                        code: model_error.code().into(),
                        message: model_error.message,
                    };
                    return self.fail(failure).await;
                }
                Err(Interrupted::Live(Interruption::Cancelled(reason))) => return self.cancel(reason).await,
                Err(Interrupted::Live(Interruption::Fenced)) => {
                    return Err(Halt::Store(StoreError::Superseded))
                }
                Err(Interrupted::ClientLeft) => {
                    return self
                        .cancel("the client disconnected (on_disconnect = cancel)".into())
                        .await
                }
            }
        }
    }

    /// Stores the run as it stands with the events since the last commit
    /// and then `held` (the chunks of a transition), then releases what was
    /// held back.
    async fn commit(&mut self, held: Vec<Chunk>) -> Result<(), Halt> {
        self.commit_counted(held, |_, _| {}).await
    }

    /// [`Drive::commit`] of a transition, counted by `count` (with the
    /// metrics and the run's agent) before anybody sees its chunks.
    async fn commit_counted(
        &mut self,
        held: Vec<Chunk>,
        count: impl FnOnce(&crate::metrics::Metrics, &str),
    ) -> Result<(), Halt> {
        for chunk in held {
            self.emitter.hold(chunk);
        }
        self.run.updated_at = Timestamp::now();
        let (metrics, agent) = (&self.inner.config.metrics, self.run.agent_id.clone());
        self.emitter
            .commit(&mut self.run, || count(metrics, &agent))
            .await?;
        tracing::debug!(status = %self.run.status(), last_seq = self.run.last_seq(), "run stored");
        Ok(())
    }

    /// Runs the calls of `pending` that grants approve (see
    /// `runtime/grants.rs`); the calls that wait then, if any.
    async fn grant(&mut self, pending: PendingCalls) -> Result<Option<PendingCalls>, Halt> {
        let Granted {
            approved,
            mut waiting,
        } = self
            .inner
            .apply_grants(&mut self.run, pending, &self.granted)
            .await;
        for call in approved {
            if self.agent.has_side_effects(&call.name) {
                self.emitter.write_unwritten().await?;
            }
            let span = tracing::info_span!("tool_call", tool_call_id = %call.id, tool = %call.name);
            let outcome = self
                .agent
                .call_tool(&call.name, &call.args, ToolContext::IN_RUN)
                .instrument(span)
                .await;
            let state = &mut self.run.state;
            waiting.extend(
                self.agent
                    .record_outcome(state, call, outcome, &mut self.emitter)
                    .await,
            );
        }
        Ok(PendingCalls::new(waiting))
    }

    /// Pending calls wait for Resume: the suspension is stored before any
    /// `tool_call_suspended` chunk is released.
    async fn suspend(&mut self, pending: PendingCalls) -> Result<(), Halt> {
        let chunks = self.run.suspend(pending, &self.agent.waits, Timestamp::now())?;
        self.commit_counted(chunks, |metrics, agent| metrics.run_suspended(agent))
            .await?;
        lifecycle_log::suspended(&self.run, self.run.pending());
        Ok(())
    }

    async fn complete(&mut self, reason: FinishReason, final_text: String) -> Result<(), Halt> {
        let chunks = self.run.complete(reason, final_text, Timestamp::now())?;
        self.commit_counted(chunks, |metrics, agent| metrics.run_completed(agent))
            .await?;
        lifecycle_log::finished(&self.run, reason);
        Ok(())
    }

    async fn fail(&mut self, failure: RunFailure) -> Result<(), Halt> {
        tracing::warn!(code = %failure.code, message = %failure.message, "run failed");
        let chunks = self.run.fail(failure, Timestamp::now())?;
        self.commit_counted(chunks, |metrics, agent| metrics.run_failed(agent))
            .await?;
        lifecycle_log::finished(&self.run, FinishReason::Error);
        Ok(())
    }

    /// Stops the run where it is: whatever the interrupted step was doing
    /// (an in-flight model call included) has been dropped.
    async fn cancel(&mut self, reason: String) -> Result<(), Halt> {
        tracing::info!(%reason, "run cancelled");
        let chunks = self.run.cancel(reason, Timestamp::now())?;
        self.commit_counted(chunks, |metrics, agent| metrics.run_cancelled(agent, None))
            .await?;
        lifecycle_log::finished(&self.run, FinishReason::Cancelled);
        Ok(())
    }
}
