//! Resume: checks an answer against the pending call it answers, claims the
//! suspension, and continues the run. A refused Resume changes nothing.
//!
//! The claim lets exactly one of racing Resumes through. With a store that
//! several replicas share it is a commit, a compare-and-set on the version
//! the run was read at, stored before the continuation starts. With a store
//! that this process alone writes (SQLite, memory), the claim is taken in
//! this process, before the run is read, and the continuation's first write
//! stores it together with the first chunks of the continuation (under the
//! same compare-and-set): one write where there were two, and since no
//! client sees a chunk before it is stored, an answer that any client saw
//! taken is never lost.

use super::emitter::Staging;
use super::execute::Work;
use super::live::{LiveRun, LiveRuns};
use super::subscribe::Wanted;
use super::{RunStream, Runtime, RuntimeError};
use crate::agent::{record_result, Resolution};
use crate::chunk::Chunk;
use crate::run::{AnswerRecord, AnswerVia, PendingCall, ResumeRecord, RunId, RunRecord, RunStatus};
use crate::store::StoreError;
use crate::tenant::Tenant;
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
    /// Answers a suspended call and streams the run's continuation. With a
    /// `request_id` used before, replays that Resume's continuation instead
    /// (or refuses, if the answer differs).
    /// Only `tenant`'s runs can be resumed; another tenant's is not found.
    pub async fn resume(&self, tenant: &Tenant, request: ResumeRun) -> Result<RunStream, RuntimeError> {
        self.resume_via(tenant, request, None, AnswerVia::Resume).await
    }

    /// [`Runtime::resume`], recording that the answer came `via` Resume or
    /// auto-resume; `loaded` is the run if the caller just read it (as
    /// `tenant`'s), so that it is not read again.
    pub(super) async fn resume_via(
        &self,
        tenant: &Tenant,
        request: ResumeRun,
        loaded: Option<Box<RunRecord>>,
        via: AnswerVia,
    ) -> Result<RunStream, RuntimeError> {
        let resumed = self.try_resume(tenant, request, loaded, via).await;
        if let Err(error) = &resumed {
            self.inner.config.metrics.resume_rejected(error);
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
        let claim = self.claim_here(request.run_id);
        let mut run = match loaded {
            // A run read before the claim may be stale: read it again.
            Some(run) if claim.is_none() => *run,
            _ => self.inner.load_run_of(tenant, request.run_id).await?,
        };
        if let Some(earlier) = earlier_resume(&run, &request)? {
            let first_seq = earlier.first_seq;
            return self.follow(tenant, run.id, Wanted::Segment { first_seq }).await;
        }
        match &claim {
            // The claim is this Resume's own.
            Some(Claim::Held(_)) => self.inner.expire_unclaimed(&mut run).await?,
            _ => self.inner.expire_if_due(&mut run).await?,
        }
        if run.status != RunStatus::Suspended {
            return Err(RuntimeError::NotSuspended(run.status));
        }
        let claim = match claim {
            Some(Claim::Held(claim)) => Some(claim),
            Some(Claim::Taken) => return Err(RuntimeError::ResumeConflict),
            None => None,
        };
        let agent = self.inner.agent_for_run(&run)?;
        let index = pick_pending(&run.state.pending, request.tool_call_id.as_deref())?;
        let resolution = agent.resolve(&run.state.pending[index], &request.answer)?;
        let max_runs = self.inner.config.limits.max_concurrent_runs_per_tenant;
        let slot = self.inner.tenant_runs.acquire(tenant, max_runs)?;

        // The answer fits: claim the suspension. The answer is stored with
        // the claim, so an acknowledged answer is never lost.
        let answered = run.state.pending.remove(index);
        run.state.answers.push(AnswerRecord {
            tool_call_id: answered.call.id.clone(),
            answer: request.answer.clone(),
            answered_at: Timestamp::now(),
            answered_by: tenant.clone(),
            via,
        });
        let mut first = Staging::after(run.last_seq);
        first.push(Chunk::Start {
            agent_id: run.agent_id.clone(),
            resumed: true,
        });
        if let Some(request_id) = request.request_id {
            run.state.resumes.push(ResumeRecord {
                request_id,
                tool_call_id: answered.call.id.clone(),
                answer: request.answer,
                first_seq: first.last_seq,
            });
        }
        let approved = match resolution {
            Resolution::Output(output) => {
                record_result(&mut run.state, &answered.call, output, &mut first).await;
                None
            }
            Resolution::Execute => Some(answered.call),
        };
        run.status = RunStatus::Running;
        run.expires_at = None;
        let suspended_since = std::mem::replace(&mut run.updated_at, Timestamp::now());
        run.last_seq = first.last_seq;
        // The claim makes this replica the run's executor.
        run.lease = Some(self.inner.new_lease());
        let claimed = match claim {
            // Stored by the continuation's first write.
            Some(claim) => Some(claim.keep()),
            None => {
                let expected = run.version;
                run.version += 1;
                match self.inner.store.commit(&run, expected, &first.events).await {
                    Ok(()) => None,
                    Err(StoreError::VersionConflict { .. }) => return Err(RuntimeError::ResumeConflict),
                    Err(other) => return Err(other.into()),
                }
            }
        };
        let metrics = &self.inner.config.metrics;
        metrics.run_resumed(&run.agent_id, suspended_since);
        let work = Work::Continue(approved.into_iter().collect());
        Ok(self.execute(agent, run, first.events, work, slot, claimed))
    }

    /// Claims run `id` in this process, if the store is one that only this
    /// process writes (`None` otherwise: the claim is a commit then).
    fn claim_here(&self, id: RunId) -> Option<Claim<'_>> {
        if self.inner.store.feed().is_some() {
            return None;
        }
        let live = &self.inner.live;
        Some(match live.try_start_execution(id) {
            Some(run) => Claim::Held(HeldClaim { live, run: Some(run) }),
            None => Claim::Taken,
        })
    }
}

/// A claim on a run in this process.
enum Claim<'a> {
    Held(HeldClaim<'a>),
    /// The run executes here already (another Resume claimed it).
    Taken,
}

/// A run marked as executing here; unmarked when dropped, unless kept.
struct HeldClaim<'a> {
    live: &'a LiveRuns,
    run: Option<std::sync::Arc<LiveRun>>,
}

impl HeldClaim<'_> {
    /// The run's live entry, for the execution that carries the claim on.
    fn keep(mut self) -> std::sync::Arc<LiveRun> {
        self.run.take().expect("a claim is kept once")
    }
}

impl Drop for HeldClaim<'_> {
    fn drop(&mut self) {
        if let Some(run) = self.run.take() {
            run.stop_executing();
            self.live.release(run.id());
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
