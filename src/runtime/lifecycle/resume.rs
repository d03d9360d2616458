//! Resume: checks an answer against the pending call it answers, claims the
//! suspension, and continues the run. A refused Resume changes nothing.
//!
//! The claim is a commit: a compare-and-set on the version the run was read
//! at, which stores the answer, the continuation's first chunks and this
//! replica's lease before anything is streamed. So of racing Resumes (or a
//! Resume racing CancelRun or an expiry) exactly one write goes through,
//! whichever replica each came to; the others are refused before any chunk,
//! naming what the run became. An answer that any client saw taken is never
//! lost.

use crate::domain::{
    Answer, AnswerRecord, AnswerVia, PendingCall, ResumeRecord, RunId, RunRecord, RunStatus, Tenant,
    Timestamp, TraceContext,
};
use crate::runtime::execution::Work;
use crate::runtime::fanout::Wanted;
use crate::runtime::{RunStream, Runtime, RuntimeError};
use crate::store::StoreError;

/// A request to answer a suspended call.
#[derive(Clone, Debug)]
pub struct ResumeRun {
    pub run_id: RunId,
    /// May be `None` when exactly one call is pending.
    pub tool_call_id: Option<String>,
    pub answer: Answer,
    pub request_id: Option<String>,
    /// The W3C trace context the request came with: the continuation
    /// continues its trace (linked to the trace that started the run).
    pub trace: Option<TraceContext>,
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
    /// [`Runtime::resume`], recording that the answer came `via` Resume or
    /// auto-resume; `loaded` is the run if the caller just read it (as
    /// `tenant`'s), so that it is not read again.
    pub(in crate::runtime) async fn resume_via(
        &self,
        tenant: &Tenant,
        request: ResumeRun,
        loaded: Option<Box<RunRecord>>,
        via: AnswerVia,
    ) -> Result<RunStream, RuntimeError> {
        let resumed = self.try_resume(tenant, request, loaded, via).await;
        if let Some(reason) = resumed.as_ref().err().and_then(RuntimeError::resume_rejection) {
            self.inner.config.metrics.resume_rejected(reason);
        }
        resumed
    }

    async fn try_resume(
        &self,
        tenant: &Tenant,
        request: ResumeRun,
        loaded: Option<Box<RunRecord>>,
        via: AnswerVia,
    ) -> Result<RunStream, RuntimeError> {
        let mut run = match loaded {
            Some(run) => *run,
            None => self.inner.load_run_of(tenant, request.run_id).await?,
        };
        if let Some(earlier) = earlier_resume(&run, &request)? {
            let first_seq = earlier.first_seq;
            return self.follow(tenant, run.id, Wanted::Segment { first_seq }).await;
        }
        self.inner.expire_if_due(&mut run).await?;
        if run.status() != RunStatus::Suspended {
            return Err(RuntimeError::NotSuspended(run.status()));
        }
        let agent = self.inner.agent_for_run(&run)?;
        let index = pick_pending(run.pending(), request.tool_call_id.as_deref())?;
        let resolution = agent.resolve(&run.pending()[index], &request.answer)?;
        let max_runs = self.inner.config.limits.max_concurrent_runs_per_tenant;
        let slot = self.inner.tenant_runs.acquire(tenant, max_runs)?;

        // The answer fits: claim the suspension. The answer is stored with
        // the claim, so an acknowledged answer is never lost.
        let suspended_since = run.updated_at;
        let answer = AnswerRecord {
            tool_call_id: run.pending()[index].call.id.clone(),
            answer: request.answer,
            answered_at: Timestamp::now(),
            answered_by: tenant.clone(),
            via,
            proceeds_from: None,
        };
        // The claim makes this replica the run's executor.
        let lease = self.inner.new_lease();
        let (chunks, next) = run
            .answer(index, answer, request.request_id, resolution, lease)
            .map_err(|wrong| RuntimeError::NotSuspended(wrong.from))?;
        let first = run.stage(chunks);
        match self
            .inner
            .store
            .commit(&run, first.expected_version, &first.events)
            .await
        {
            Ok(()) => {}
            Err(StoreError::VersionConflict { .. }) => {
                return Err(self.lost_claim(tenant, run.id).await);
            }
            Err(other) => return Err(other.into()),
        }
        let metrics = &self.inner.config.metrics;
        metrics.run_resumed(&run.agent_id, suspended_since);
        if let Some(answer) = run.state.answers.last() {
            crate::runtime::lifecycle_log::resumed(&run, &answer.tool_call_id);
        }
        let work = Work::Continue(next.into_iter().collect());
        Ok(self.execute(agent, run, first.events, work, slot, request.trace))
    }

    /// Why a claim lost its compare-and-set: what the run is now (resumed
    /// by another Resume, cancelled, expired), read again.
    async fn lost_claim(&self, tenant: &Tenant, id: RunId) -> RuntimeError {
        match self.inner.load_run_of(tenant, id).await {
            Ok(run) if run.status() == RunStatus::Suspended => RuntimeError::ResumeConflict,
            Ok(run) => RuntimeError::NotSuspended(run.status()),
            Err(error) => error,
        }
    }
}

/// The earlier Resume of this run with the same `request_id`, if any; the
/// same key with another answer is refused.
fn earlier_resume<'a>(
    run: &'a RunRecord,
    request: &ResumeRun,
) -> Result<Option<&'a ResumeRecord>, RuntimeError> {
    let Some(request_id) = &request.request_id else {
        return Ok(None);
    };
    let Some(earlier) = run.state.resumes.iter().find(|r| &r.request_id == request_id) else {
        return Ok(None);
    };
    let same_call = request
        .tool_call_id
        .as_ref()
        .is_none_or(|id| *id == earlier.tool_call_id);
    if same_call && earlier.answer == request.answer {
        Ok(Some(earlier))
    } else {
        Err(RuntimeError::RequestIdReused(request_id.clone()))
    }
}
