//! Time and suspended runs: reminders, and the deadline. A suspended run
//! past its time to live meets its deadline: it expires, or, when the tools
//! of every call it waits on say so (`on_expiry`), the deadline declines or
//! approves them and the run continues here. Lazily, whenever a request
//! reads the run (GetRun, Resume, CancelRun, SubscribeRun, a start on its
//! thread: see `expire_if_due`), and by the sweep, a background task that
//! also sends the reminders due (`remind_after`: a `reminded` run event).
//! Every one of these writes is a compare-and-set on the version the run
//! was read at, so every replica may sweep the same store and a restart
//! loses nothing: exactly one writer wins, the others see the conflict and
//! take what it stored. Nothing touches a run before it is due. With a
//! thread retention configured, the same task deletes the threads idle for
//! longer than it (see `retention.rs`).

use std::sync::Arc;

use tracing::instrument;

use crate::agent::Agent;
use crate::domain::{
    Answer, AnswerRecord, AnswerVia, Answered, Chunk, Decider, DecisionOutcome, OnExpiry, PendingCall,
    Resolution, RunEventKind, RunId, RunRecord, RunStatus, Staged, Timestamp, ToolOutput, Waiting,
    NOT_ANSWERED_IN_TIME,
};
use crate::runtime::execution::Work;
use crate::runtime::lifecycle_log;
use crate::runtime::{Inner, Runtime, RuntimeError};
use crate::store::StoreError;

/// Due runs read from the store at a time.
const SWEEP_BATCH: usize = 100;
/// Batches per sweep at most; whatever is left waits for the next tick, so
/// one sweep cannot spin however many runs are due.
const MAX_BATCHES: usize = 100;

impl Inner {
    /// Meets the deadline of every suspended run due now and sends the
    /// reminders due (up to a bound per call); returns how many runs this
    /// call found past their deadline and now expired or continued.
    #[instrument(skip_all)]
    pub(in crate::runtime) async fn sweep_expired(self: &Arc<Self>) -> Result<usize, RuntimeError> {
        let mut expired = 0;
        for _ in 0..MAX_BATCHES {
            let due = self
                .store
                .queries
                .due_suspensions(Timestamp::now(), SWEEP_BATCH)
                .await?;
            let more = due.len() == SWEEP_BATCH;
            let mut failed = 0;
            for id in due {
                match self.wake(id).await {
                    Ok(true) => expired += 1,
                    Ok(false) => {}
                    Err(error) => {
                        // One bad run must not hold up the others.
                        tracing::warn!(run_id = %id, %error, "could not remind or expire a due run");
                        failed += 1;
                    }
                }
            }
            // A full batch of failures would come back whole: wait instead.
            if !more || failed == SWEEP_BATCH {
                break;
            }
        }
        if expired > 0 {
            tracing::debug!(expired, "expiry sweep done");
        }
        Ok(expired)
    }

    /// Meets the deadline of one due run, or sends its reminder; whether it
    /// met its deadline now. A conflict inside means a Resume or another
    /// replica moved the run first: what they stored stands.
    async fn wake(self: &Arc<Self>, id: RunId) -> Result<bool, RuntimeError> {
        let mut run = self.store.runs.load_run(id).await?;
        let suspended = run.position();
        self.expire_if_due(&mut run).await?;
        if run.status() != RunStatus::Suspended {
            return Ok(run.position() != suspended);
        }
        self.remind_if_due(&mut run).await?;
        Ok(false)
    }

    /// Meets the deadline of a suspended run whose time to live has passed
    /// (`run` becomes what the store holds then, or the continuation this
    /// replica now executes).
    pub(in crate::runtime) async fn expire_if_due(
        self: &Arc<Self>,
        run: &mut RunRecord,
    ) -> Result<(), RuntimeError> {
        if !run.expiry_due(Timestamp::now()) {
            return Ok(());
        }
        // Rare: boxed, so that the future of every caller stays small.
        Box::pin(self.meet_deadline(run)).await
    }

    /// The deadline of a suspended run: the calls' tools decide whether it
    /// expires or continues without their answers.
    async fn meet_deadline(self: &Arc<Self>, run: &mut RunRecord) -> Result<(), RuntimeError> {
        let now = Timestamp::now();
        let decided = self
            .agent_for_run(run)
            .ok()
            .and_then(|agent| deadline_answers(&agent, run, now).map(|answers| (agent, answers)));
        match decided {
            Some((agent, answers)) => self.continue_past_deadline(agent, run, answers).await,
            None => self.store_expiry(run).await,
        }
    }

    /// Stores a suspended run past its time to live as expired.
    async fn store_expiry(&self, run: &mut RunRecord) -> Result<(), RuntimeError> {
        let suspended_since = run.updated_at;
        let pending = run.pending().to_vec();
        let chunks = run.expire(Timestamp::now())?;
        let kinds = RunEventKind::of_write(None, run.status());
        match self.commit_staged(run, chunks, &kinds).await {
            Ok(_) => {
                lifecycle_log::decided(run, run.state.change_decisions());
                lifecycle_log::expired(run, suspended_since);
                self.config.metrics.run_expired(&run.agent_id, suspended_since);
                self.abandon(run, &pending);
                if let Some(live) = self.live.get(run.id) {
                    live.close();
                }
                Ok(())
            }
            Err(error) => self.lost_to_another_writer(run, error).await,
        }
    }

    /// Claims a suspended run past its deadline with the deadline's
    /// `answers` (`on_expiry` declined or approved every call it waited
    /// on), as a Resume would, and continues it here: a `resumed` run
    /// event carries the deadline's decisions.
    async fn continue_past_deadline(
        self: &Arc<Self>,
        agent: Arc<Agent>,
        run: &mut RunRecord,
        answers: Vec<Answered>,
    ) -> Result<(), RuntimeError> {
        // A Resume's claim of the run is under way here: it decides.
        let Some(live) = self.live.try_start_execution(run.id) else {
            return Ok(());
        };
        let suspended = run.clone();
        let abandoned: Vec<PendingCall> = answers
            .iter()
            .map(|answered| suspended.pending()[answered.index].clone())
            .filter(|call| matches!(call.waiting, Waiting::Suspended { .. }))
            .collect();
        let (chunks, next) = run.answer(answers, None, self.new_lease())?;
        let kinds = RunEventKind::of_write(Some(RunEventKind::Resumed), run.status());
        let first = match self.commit_staged(run, chunks, &kinds).await {
            Ok(first) => first,
            Err(error) => {
                live.stop_executing();
                self.live.release(run.id);
                *run = suspended;
                return self.lost_to_another_writer(run, error).await;
            }
        };
        lifecycle_log::resumed(run);
        self.config
            .metrics
            .run_resumed(&run.agent_id, suspended.updated_at);
        self.abandon(run, &abandoned);
        let work = Work::Continue {
            calls: next,
            grants: Vec::new(),
        };
        Runtime {
            inner: Arc::clone(self),
        }
        .execute_detached(live, agent, run.clone(), first.events, work);
        Ok(())
    }

    /// Sends a suspended run's reminder if one is due: a commit that
    /// changes nothing else, with a `reminded` run event listing the calls
    /// it still waits on.
    async fn remind_if_due(&self, run: &mut RunRecord) -> Result<(), RuntimeError> {
        let now = Timestamp::now();
        if !run.reminder_due(now) {
            return Ok(());
        }
        let suspended = run.clone();
        run.remind(now)?;
        match self.commit_staged(run, [], &[RunEventKind::Reminded]).await {
            Ok(_) => {
                lifecycle_log::reminded(run, run.updated_at);
                self.config.metrics.reminder_sent(&run.agent_id);
                Ok(())
            }
            Err(error) => {
                *run = suspended;
                self.lost_to_another_writer(run, error).await
            }
        }
    }

    /// Each write of the sweep's: stages `chunks` on `run` and commits
    /// them with run events of `kinds`; what it staged once stored.
    async fn commit_staged(
        &self,
        run: &mut RunRecord,
        chunks: impl IntoIterator<Item = Chunk>,
        kinds: &[RunEventKind],
    ) -> Result<Staged, StoreError> {
        let staged = run.stage(chunks);
        self.store
            .runs
            .commit(run, staged.expected_version, &staged.events, kinds)
            .await?;
        Ok(staged)
    }

    /// A write of the sweep's that `error` refused: if somebody else moved
    /// the run first (a Resume, another replica's sweep), what they stored
    /// is the truth, and `run` becomes it.
    async fn lost_to_another_writer(
        &self,
        run: &mut RunRecord,
        error: StoreError,
    ) -> Result<(), RuntimeError> {
        match error {
            StoreError::VersionConflict { .. } => {
                *run = self.store.runs.load_run(run.id).await?;
                Ok(())
            }
            other => Err(other.into()),
        }
    }
}

/// The deadline's answer to every call `run` waits on, as its tool's
/// `on_expiry` says (see `WaitPolicies::at_deadline`); `None` if any of
/// them expires: then the run does.
fn deadline_answers(agent: &Agent, run: &RunRecord, now: Timestamp) -> Option<Vec<Answered>> {
    let deadline = Decider::deadline();
    run.pending()
        .iter()
        .enumerate()
        .map(|(index, pending)| {
            let (answer, resolution, outcome) = match (agent.waits.at_deadline(pending), &pending.waiting) {
                (OnExpiry::Expire, _) => return None,
                (OnExpiry::Approve, _) => {
                    let approved = Answer::Approval {
                        approved: true,
                        reason: String::new(),
                        edited_args: None,
                    };
                    let resolution = agent.resolve(pending, &approved).ok()?;
                    (approved, resolution, DecisionOutcome::Approved)
                }
                (OnExpiry::Decline, Waiting::Approval) => {
                    let declined = Answer::Approval {
                        approved: false,
                        reason: NOT_ANSWERED_IN_TIME.to_owned(),
                        edited_args: None,
                    };
                    let resolution = agent.resolve(pending, &declined).ok()?;
                    (declined, resolution, DecisionOutcome::Declined)
                }
                (OnExpiry::Decline, Waiting::Suspended { .. }) => (
                    Answer::Declined,
                    Resolution::Output(ToolOutput::ok(NOT_ANSWERED_IN_TIME)),
                    DecisionOutcome::Declined,
                ),
            };
            Some(Answered {
                index,
                record: AnswerRecord {
                    tool_call_id: pending.call.id.clone(),
                    answer,
                    answered_at: now,
                    answered_by: run.tenant.clone(),
                    via: AnswerVia::Deadline,
                    proceeds_from: None,
                },
                resolution,
                decision: deadline.decide(&pending.call.id, outcome, now),
            })
        })
        .collect()
}
