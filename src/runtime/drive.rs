//! Drives a run from where it stands to its next suspension or finish, one
//! agent step at a time, committing each step (state and events together)
//! before going on. A step can be cut short by CancelRun or, when the run
//! asks for it, by its client going away. One function per transition.

use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::instrument;

use super::live::LiveRun;
use super::{Emitter, Inner};
use crate::agent::{Agent, StepEnd};
use crate::chunk::{Chunk, Event, FinishReason, RunFailure};
use crate::run::{RunRecord, RunStatus, Waiting};
use crate::store::StoreError;
use crate::time::Timestamp;
use crate::tools::{ToolCall, ToolContext};

/// A run being executed by this process. While it exists, the run's live
/// entry says so.
pub(super) struct Execution {
    inner: Arc<Inner>,
    agent: Arc<Agent>,
    run: RunRecord,
    emitter: Emitter,
}

/// Why a step did not run to its end.
enum Interrupted {
    Cancelled(String),
    ClientLeft,
}

/// Resolves when the client's stream is gone (at once if there is none).
async fn client_gone(client: Option<mpsc::Sender<Event>>) {
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
        }
    }

    fn live(&self) -> Arc<LiveRun> {
        Arc::clone(self.emitter.live())
    }

    /// Steps until the run suspends or finishes.
    #[instrument(skip_all, fields(run_id = %self.run.id, agent = %self.run.agent_id))]
    pub(super) async fn run_steps(mut self) {
        let outcome = self.step_loop().await;
        self.settle(outcome).await;
    }

    /// Continues after a Resume claimed a suspension: runs the call that was
    /// approved (if any), then suspends again while calls are pending, or
    /// steps on.
    #[instrument(skip_all, fields(run_id = %self.run.id, agent = %self.run.agent_id))]
    pub(super) async fn continue_after_resume(mut self, approved: Option<ToolCall>) {
        if let Some(call) = approved {
            let outcome = self
                .agent
                .call_tool(&call.name, &call.args, ToolContext::IN_RUN)
                .await;
            self.agent
                .record_outcome(&mut self.run.state, call, outcome, &mut self.emitter)
                .await;
        }
        let outcome = if self.run.state.pending.is_empty() {
            self.step_loop().await
        } else {
            self.suspend().await
        };
        self.settle(outcome).await;
    }

    /// Ends the execution. If the store refused a commit, the client still
    /// gets a well-formed end of stream, without the chunks that were never
    /// stored; what is stored stays as it was at the last commit.
    async fn settle(&mut self, outcome: Result<(), StoreError>) {
        if let Err(error) = outcome {
            tracing::error!(%error, "could not store the run");
            self.emitter.discard_held();
            let failure = RunFailure {
                code: "store_unavailable".into(),
                message: error.to_string(),
            };
            self.emitter.emit_now(Chunk::Error(failure)).await;
            let usage = self.run.state.usage;
            let finish = Chunk::Finish {
                reason: FinishReason::Error,
                usage,
                text: String::new(),
            };
            self.emitter.emit_now(finish).await;
        }
        self.emitter.live().stop_executing();
        self.inner.live.release(self.run.id);
    }

    async fn step_loop(&mut self) -> Result<(), StoreError> {
        loop {
            if self.run.state.steps >= self.run.options.max_steps {
                return self.finish(FinishReason::MaxSteps).await;
            }
            let live = self.live();
            let client = self.emitter.client();
            let watch_client = self.run.options.cancel_on_disconnect;
            let step = {
                let step = self
                    .agent
                    .step(&mut self.run.state, &self.run.options, &mut self.emitter);
                tokio::select! {
                    biased;
                    reason = live.cancelled() => Err(Interrupted::Cancelled(reason)),
                    () = client_gone(client), if watch_client => Err(Interrupted::ClientLeft),
                    step = step => Ok(step),
                }
            };
            match step {
                Ok(Ok(StepEnd::ToolsDone)) => self.commit(RunStatus::Running).await?,
                Ok(Ok(StepEnd::Stopped)) => return self.finish(FinishReason::Stop).await,
                Ok(Ok(StepEnd::Suspended)) => return self.suspend().await,
                Ok(Err(model_error)) => {
                    let failure = RunFailure {
                        code: "model_error".into(),
                        message: model_error.message,
                    };
                    return self.fail(failure).await;
                }
                Err(Interrupted::Cancelled(reason)) => return self.cancel(reason).await,
                Err(Interrupted::ClientLeft) => {
                    return self
                        .cancel("the client disconnected (on_disconnect = cancel)".into())
                        .await
                }
            }
        }
    }

    /// Stores the run with `status` and the events since the last commit,
    /// then releases the held-back chunks.
    async fn commit(&mut self, status: RunStatus) -> Result<(), StoreError> {
        let expected = self.run.version;
        self.run.version += 1;
        self.run.status = status;
        self.run.updated_at = Timestamp::now();
        self.run.last_seq = self.emitter.last_seq();
        self.inner
            .store
            .commit(&self.run, expected, &self.emitter.unstored())
            .await?;
        tracing::debug!(%status, last_seq = self.run.last_seq, "run stored");
        self.emitter.committed().await;
        Ok(())
    }

    /// Pending calls wait for Resume: the suspension is stored before any
    /// `tool_call_suspended` chunk is released.
    async fn suspend(&mut self) -> Result<(), StoreError> {
        let expires_at = Timestamp::now().after(self.run.options.suspend_ttl);
        self.run.expires_at = Some(expires_at);
        for pending in &self.run.state.pending {
            let call = pending.call.clone();
            self.emitter.hold(match &pending.waiting {
                Waiting::Suspended { payload } => Chunk::ToolCallSuspended {
                    call,
                    payload: payload.clone(),
                    expires_at: Some(expires_at),
                },
                Waiting::Approval => Chunk::ToolCallApproval { call },
            });
        }
        self.hold_finish(FinishReason::Suspended);
        self.commit(RunStatus::Suspended).await
    }

    async fn finish(&mut self, reason: FinishReason) -> Result<(), StoreError> {
        self.run.expires_at = None;
        self.hold_finish(reason);
        self.commit(RunStatus::Completed).await
    }

    async fn fail(&mut self, failure: RunFailure) -> Result<(), StoreError> {
        tracing::warn!(code = %failure.code, message = %failure.message, "run failed");
        self.emitter.emit_now(Chunk::Error(failure.clone())).await;
        self.run.state.failure = Some(failure);
        self.hold_finish(FinishReason::Error);
        self.commit(RunStatus::Failed).await
    }

    /// Stops the run where it is: whatever the interrupted step was doing
    /// (an in-flight model call included) has been dropped.
    async fn cancel(&mut self, reason: String) -> Result<(), StoreError> {
        tracing::info!(%reason, "run cancelled");
        self.run.state.pending.clear();
        self.run.state.cancel_reason = Some(reason);
        self.run.expires_at = None;
        self.hold_finish(FinishReason::Cancelled);
        self.commit(RunStatus::Cancelled).await
    }

    fn hold_finish(&mut self, reason: FinishReason) {
        let text = match reason {
            FinishReason::Stop | FinishReason::MaxSteps => self.run.state.final_text.clone(),
            FinishReason::Suspended | FinishReason::Cancelled | FinishReason::Error => String::new(),
        };
        self.emitter.hold(Chunk::Finish {
            reason,
            usage: self.run.state.usage,
            text,
        });
    }
}
