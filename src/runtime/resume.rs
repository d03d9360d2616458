//! Resume: checks an answer against the pending call it answers, claims the
//! suspension with a compare-and-set (so racing Resumes let exactly one
//! through), and continues the run. A refused Resume changes nothing.

use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::instrument;

use super::drive::Execution;
use super::{Emitter, RunStream, Runtime, RuntimeError};
use crate::agent::{record_result, Resolution};
use crate::chunk::Chunk;
use crate::run::{PendingCall, RunId, RunRecord, RunStatus};
use crate::store::StoreError;
use crate::time::Timestamp;
use crate::tools::Answer;

/// A request to answer a suspended call.
#[derive(Clone, Debug)]
pub struct ResumeRun {
    pub run_id: RunId,
    /// May be `None` when exactly one call is pending.
    pub tool_call_id: Option<String>,
    pub answer: Answer,
    pub request_id: Option<String>,
}

/// Which pending call an answer is for.
fn pick_pending(pending: &[PendingCall], tool_call_id: Option<&str>) -> Result<usize, RuntimeError> {
    let ids = || pending.iter().map(|p| p.call.id.clone()).collect::<Vec<_>>();
    match tool_call_id {
        Some(id) => {
            pending
                .iter()
                .position(|p| p.call.id == id)
                .ok_or_else(|| RuntimeError::ToolCallNotPending {
                    tool_call_id: id.to_owned(),
                    pending: ids(),
                })
        }
        None if pending.len() == 1 => Ok(0),
        None => Err(RuntimeError::ToolCallAmbiguous { pending: ids() }),
    }
}

impl Runtime {
    /// Answers a suspended call and streams the run's continuation.
    #[instrument(skip_all, fields(run_id = %request.run_id, tool_call_id))]
    pub async fn resume(&self, request: ResumeRun) -> Result<RunStream, RuntimeError> {
        let run = self.inner.store.load_run(request.run_id).await?;
        let mut run: RunRecord = self.inner.expire_if_due(run).await?;
        if run.status != RunStatus::Suspended {
            return Err(RuntimeError::NotSuspended(run.status));
        }
        let agent = self
            .inner
            .agents
            .get(&run.agent_id)
            .ok_or_else(|| RuntimeError::AgentGone(run.agent_id.clone()))?
            .clone();
        let index = pick_pending(&run.state.pending, request.tool_call_id.as_deref())?;
        tracing::Span::current().record("tool_call_id", run.state.pending[index].call.id.as_str());
        let resolution = agent.resolve(&run.state.pending[index], &request.answer)?;

        // The answer fits: claim the suspension. The answer is stored with
        // the claim, so an acknowledged answer is never lost.
        let answered = run.state.pending.remove(index);
        let (client, events) = mpsc::channel(self.inner.config.stream_buffer);
        let mut emitter = Emitter::new(run.last_seq, client);
        emitter.hold(Chunk::Start {
            agent_id: run.agent_id.clone(),
            resumed: true,
        });
        let approved = match resolution {
            Resolution::Output(output) => {
                record_result(&mut run.state, &answered.call, output, &mut emitter).await;
                None
            }
            Resolution::Execute => Some(answered.call),
        };
        let expected = run.version;
        run.version += 1;
        run.status = RunStatus::Running;
        run.expires_at = None;
        run.updated_at = Timestamp::now();
        run.last_seq = emitter.last_seq();
        match self.inner.store.commit(&run, expected, emitter.unstored()).await {
            Ok(()) => {}
            Err(StoreError::VersionConflict { .. }) => return Err(RuntimeError::ResumeConflict),
            Err(other) => return Err(other.into()),
        }
        emitter.committed().await;

        let run_id = run.id;
        let execution = Execution::new(Arc::clone(&self.inner), agent, run, emitter);
        tokio::spawn(execution.continue_after_resume(approved));
        Ok(RunStream { run_id, events })
    }
}
