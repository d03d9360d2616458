//! Resume: checks an answer against the pending call it answers, claims the
//! suspension, and continues the run. A refused Resume changes nothing.
//!
//! The claim is a commit: a compare-and-set on the version the run was read
//! at, which stores the answer, the continuation up to its next durable
//! point (its next suspension or its finish, usually) and this replica's
//! lease before anything is streamed; a second claim of the same
//! suspension in this process is refused at once. So of racing Resumes (or a
//! Resume racing CancelRun or an expiry) exactly one write goes through,
//! whichever replica each came to; the others are refused before any chunk,
//! naming what the run became. An answer that any client saw taken is never
//! lost.

use crate::agent::Agent;
use crate::domain::{
    Answer, AnswerError, AnswerRecord, AnswerVia, Answered, Decider, DecisionOutcome, DecisionSource, Grant,
    PendingCall, Remember, ResumeRecord, RunId, RunRecord, RunStatus, Tenant, Timestamp, TraceContext,
};
use crate::runtime::execution::{Begin, Work};
use crate::runtime::fanout::Wanted;
use crate::runtime::{RunStream, Runtime, RuntimeError};
use crate::store::StoreError;

/// A request to answer suspended calls of a run: one, or several at once
/// (all or none).
#[derive(Clone, Debug)]
pub struct ResumeRun {
    pub run_id: RunId,
    /// At least one; with several, each names its call.
    pub answers: Vec<CallAnswer>,
    pub request_id: Option<String>,
    /// The W3C trace context the request came with: the continuation
    /// continues its trace (linked to the trace that started the run).
    pub trace: Option<TraceContext>,
    /// Who answers, and through what (recorded as each call's decision).
    pub decider: Decider,
}

/// One answer of a Resume, and the pending call it is for.
#[derive(Clone, Debug, PartialEq)]
pub struct CallAnswer {
    /// May be `None` when exactly one call is pending (and only one is
    /// answered).
    pub tool_call_id: Option<String>,
    pub answer: Answer,
    /// With an approval: remember it for later calls of the tool (a grant).
    pub remember: Option<Remember>,
}

impl ResumeRun {
    /// A request of `decider` that answers one call (`tool_call_id` may
    /// be `None` when only one is pending).
    pub fn one(run_id: RunId, tool_call_id: Option<String>, answer: Answer, decider: Decider) -> Self {
        Self {
            run_id,
            answers: vec![CallAnswer {
                tool_call_id,
                answer,
                remember: None,
            }],
            request_id: None,
            trace: None,
            decider,
        }
    }
}

/// Claims a Resume makes when reminders keep landing before them.
const CLAIMS_AFTER_REMINDERS: usize = 3;

/// Why a claim did not go through.
enum Lost {
    /// The Resume is refused: the caller gets this.
    Refused(RuntimeError),
    /// A reminder was stored meanwhile: the run, as it is now, still
    /// waits on the same suspension.
    Reminded(Box<RunRecord>),
}

impl From<RuntimeError> for Lost {
    fn from(error: RuntimeError) -> Self {
        Lost::Refused(error)
    }
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
    /// [`Runtime::resume`]; `loaded` is the run if the caller just read it
    /// (as `tenant`'s), so that it is not read again.
    pub(in crate::runtime) async fn resume_loaded(
        &self,
        tenant: &Tenant,
        request: ResumeRun,
        loaded: Option<Box<RunRecord>>,
    ) -> Result<RunStream, RuntimeError> {
        // A new message on the thread answered, or a Resume did.
        let via = match request.decider.source {
            DecisionSource::Thread => AnswerVia::AutoResume,
            _ => AnswerVia::Resume,
        };
        let resumed = self.try_resume(tenant, request, loaded, via).await;
        if let Some(reason) = resumed.as_ref().err().and_then(RuntimeError::resume_rejection) {
            self.inner.config.metrics.resume_rejected(reason);
        }
        resumed
    }

    /// Resumes from the run as this process suspended it, if it did lately
    /// (see `execution/recent.rs`), and otherwise, or if that fails in any
    /// way (the kept record may be behind the store: answered elsewhere,
    /// cancelled), from the run read from the store, whose refusal is the
    /// one the caller gets.
    async fn try_resume(
        &self,
        tenant: &Tenant,
        request: ResumeRun,
        loaded: Option<Box<RunRecord>>,
        via: AnswerVia,
    ) -> Result<RunStream, RuntimeError> {
        let recent = loaded
            .is_none()
            .then(|| self.inner.recent.take(request.run_id))
            .flatten()
            .filter(|run| run.tenant == *tenant && !run.expiry_due(Timestamp::now()));
        if let Some(run) = recent {
            if let Ok(stream) = self.resume_from(tenant, request.clone(), run, via).await {
                return Ok(stream);
            }
        }
        let mut run = match loaded {
            Some(run) => *run,
            None => self.inner.load_run_of(tenant, request.run_id).await?,
        };
        for _ in 0..CLAIMS_AFTER_REMINDERS {
            match self.resume_from(tenant, request.clone(), run, via).await {
                Ok(stream) => return Ok(stream),
                Err(Lost::Refused(error)) => return Err(error),
                // Only a reminder wrote: claim the run as it is now.
                Err(Lost::Reminded(now)) => run = *now,
            }
        }
        Err(RuntimeError::ResumeConflict)
    }

    /// Resumes `run` as read (from the store, or as kept here): its claim
    /// is a compare-and-set on that version.
    async fn resume_from(
        &self,
        tenant: &Tenant,
        request: ResumeRun,
        mut run: RunRecord,
        via: AnswerVia,
    ) -> Result<RunStream, Lost> {
        if let Some(earlier) = earlier_resume(&run, &request)? {
            let first_seq = earlier.first_seq;
            return Ok(self.follow(tenant, run.id, Wanted::Segment { first_seq }).await?);
        }
        self.inner.expire_if_due(&mut run).await?;
        if run.status() != RunStatus::Suspended {
            return Err(RuntimeError::NotSuspended(run.status()).into());
        }
        let agent = self.inner.agent_for_run(&run)?;
        let now = Timestamp::now();
        let who = (tenant, &request.decider, via);
        let (answers, grants) = self.check_answers(&agent, &run, request.answers, who, now)?;
        let slot = self.inner.run_slot(tenant)?;

        // The answers fit: claim the suspension. They are stored with the
        // claim, so an acknowledged answer is never lost; the claim is
        // written with the continuation up to its next durable point (see
        // `execution/emitter.rs`), a compare-and-set on the version the
        // run was suspended at.
        let begin = Begin::Claim {
            suspended: run.position(),
            since: run.updated_at,
        };
        let suspended_seq = run.last_seq();
        // The claim makes this replica the run's executor.
        let lease = self.inner.new_lease();
        let (chunks, next) = run
            .answer(answers, request.request_id, lease)
            .map_err(|wrong| RuntimeError::NotSuspended(wrong.from))?;
        let first = run.stage(chunks);
        // The grants the answers make cover the continuation's calls at
        // once, and are stored once the claim is.
        let work = Work::Continue {
            calls: next,
            grants: grants.clone(),
        };
        let id = run.id;
        let claimed = self
            .execute(agent, run, first.events, work, slot, request.trace, begin)
            .await;
        match claimed {
            Ok(stream) => {
                self.inner.store_grants(&grants).await;
                Ok(stream)
            }
            Err(StoreError::VersionConflict { .. } | StoreError::Superseded | StoreError::NotFound) => {
                Err(self.lost_claim(tenant, id, suspended_seq).await)
            }
            Err(other) => Err(RuntimeError::from(other).into()),
        }
    }

    /// Checks every answer of a Resume against the pending call it names,
    /// without changing anything: each call at most once, each answer
    /// fitting its call's question. The first misfit refuses them all,
    /// naming the call when several are answered.
    fn check_answers(
        &self,
        agent: &Agent,
        run: &RunRecord,
        answers: Vec<CallAnswer>,
        (tenant, decider, via): (&Tenant, &Decider, AnswerVia),
        now: Timestamp,
    ) -> Result<(Vec<Answered>, Vec<Grant>), RuntimeError> {
        let several = answers.len() > 1;
        if answers.is_empty() {
            return Err(RuntimeError::InvalidAnswer(AnswerError::new(
                "answer",
                "give an answer",
            )));
        }
        let mut checked: Vec<Answered> = Vec::with_capacity(answers.len());
        let mut grants = Vec::new();
        for (position, call_answer) in answers.into_iter().enumerate() {
            let CallAnswer {
                tool_call_id,
                answer,
                remember,
            } = call_answer;
            if several && tool_call_id.is_none() {
                return Err(RuntimeError::InvalidAnswer(
                    AnswerError::new("tool_call_id", "name the call each answer is for").at(position, None),
                ));
            }
            let index = pick_pending(run.pending(), tool_call_id.as_deref())?;
            let pending = &run.pending()[index];
            if checked.iter().any(|earlier| earlier.index == index) {
                return Err(RuntimeError::InvalidAnswer(
                    AnswerError::new("tool_call_id", "this call is answered twice")
                        .at(position, Some(pending.call.id.clone())),
                ));
            }
            let resolution = agent.resolve(pending, &answer).map_err(|error| {
                let error = if several {
                    error.at(position, Some(pending.call.id.clone()))
                } else {
                    error
                };
                RuntimeError::InvalidAnswer(error)
            })?;
            let decision = decider.decide(&pending.call.id, DecisionOutcome::of(&answer), now);
            let record = AnswerRecord {
                tool_call_id: pending.call.id.clone(),
                answer,
                answered_at: now,
                answered_by: tenant.clone(),
                via,
                proceeds_from: None,
            };
            let answered = Answered {
                index,
                record,
                resolution,
                decision,
            };
            let grant = crate::runtime::grants::grant_asked(run, &answered, remember, &decider.name)
                .map_err(|error| {
                    RuntimeError::InvalidAnswer(if several {
                        error.at(position, Some(pending.call.id.clone()))
                    } else {
                        error
                    })
                })?;
            grants.extend(grant);
            checked.push(answered);
        }
        Ok((checked, grants))
    }

    /// Why a claim of the suspension whose last chunk is `suspended_seq`
    /// lost its compare-and-set: what the run is now (resumed by another
    /// Resume, cancelled, expired), read again; or, if it still waits on
    /// that suspension, a reminder was stored meanwhile (the only write
    /// that stores no chunk) and the run may be claimed again.
    async fn lost_claim(&self, tenant: &Tenant, id: RunId, suspended_seq: u64) -> Lost {
        match self.inner.load_run_of(tenant, id).await {
            Ok(run) if run.status() == RunStatus::Suspended && run.last_seq() == suspended_seq => {
                Lost::Reminded(Box::new(run))
            }
            Ok(run) if run.status() == RunStatus::Suspended => Lost::Refused(RuntimeError::ResumeConflict),
            Ok(run) => Lost::Refused(RuntimeError::NotSuspended(run.status())),
            Err(error) => Lost::Refused(error),
        }
    }
}

/// The earlier Resume of this run with the same `request_id`, if any (its
/// first answer's record); the same key with other answers is refused.
fn earlier_resume<'a>(
    run: &'a RunRecord,
    request: &ResumeRun,
) -> Result<Option<&'a ResumeRecord>, RuntimeError> {
    let Some(request_id) = &request.request_id else {
        return Ok(None);
    };
    let earlier: Vec<&ResumeRecord> = run
        .state
        .resumes
        .iter()
        .filter(|r| &r.request_id == request_id)
        .collect();
    let Some(first) = earlier.first() else {
        return Ok(None);
    };
    let same = earlier.len() == request.answers.len()
        && earlier.iter().zip(&request.answers).all(|(earlier, asked)| {
            let same_call = asked
                .tool_call_id
                .as_ref()
                .is_none_or(|id| *id == earlier.tool_call_id);
            same_call && earlier.answer == asked.answer
        });
    if same {
        Ok(Some(first))
    } else {
        Err(RuntimeError::RequestIdReused(request_id.clone()))
    }
}
