//! The transitions of a run, one method each. Each checks the phase it
//! starts from and changes nothing when that is not the run's
//! ([`WrongPhase`]); on success it changes the record and returns the
//! chunks that tell the run's streams of it. The commit that stores them
//! is prepared here too ([`RunRecord::stage`], [`RunRecord::commit_after`]):
//! the only place a run's version and last seq move.

use std::collections::BTreeMap;

use crate::{
    Chunk, Decider, DecisionOutcome, Event, FinishReason, RunFailure, Tenant, Timestamp, ToolOutput,
    WaitPolicies,
};

use super::{
    Answered, Continuation, Lease, PendingCall, PendingCalls, Phase, Position, Resolution, ResumeRecord,
    RunId, RunOptions, RunRecord, RunState, RunStatus, Waiting,
};

/// A transition asked of a run whose phase does not allow it. Nothing
/// changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot {transition} a {from} run")]
pub struct WrongPhase {
    /// What was asked: `suspend`, `answer`, `cancel`...
    pub transition: &'static str,
    /// The run's status, which does not allow it.
    pub from: RunStatus,
}

/// A change of a run, ready for the store's compare-and-set: the version
/// the store must still hold, and the chunks the change stores, numbered
/// after the last stored one.
#[derive(Debug)]
#[must_use = "a staged change is stored by a commit"]
pub struct Staged {
    pub expected_version: u64,
    pub events: Vec<Event>,
}

impl RunRecord {
    /// A new running run, held by `lease`, and its first commit: the record
    /// at version 1 with its `start` chunk.
    pub fn start(
        id: RunId,
        tenant: Tenant,
        agent_id: String,
        options: RunOptions,
        state: RunState,
        lease: Lease,
        now: Timestamp,
    ) -> (Self, Staged) {
        let start = Chunk::Start {
            agent_id: agent_id.clone(),
            resumed: false,
        };
        let mut run = Self {
            id,
            tenant,
            agent_id,
            version: 0,
            last_seq: 0,
            created_at: now,
            updated_at: now,
            request_id: None,
            metadata: BTreeMap::new(),
            options,
            run_tools: Vec::new(),
            thread: None,
            trace: None,
            state,
            phase: Phase::Running {
                lease,
                pending: Vec::new(),
            },
        };
        let first = run.stage([start]);
        (run, first)
    }

    /// Makes the record the next commit after `stored` (the version and
    /// last seq the store holds now), storing `events`, which continue the
    /// seqs after `stored.last_seq`: the version moves to the next, the
    /// last seq to the last of `events`. Returns the version the store must
    /// still hold.
    pub fn commit_after(&mut self, stored: Position, events: &[Event]) -> u64 {
        debug_assert!(
            events
                .iter()
                .zip(stored.last_seq + 1..)
                .all(|(event, seq)| event.seq == seq),
            "events continue the stored seqs"
        );
        self.version = stored.version + 1;
        self.last_seq = events.last().map_or(stored.last_seq, |event| event.seq);
        stored.version
    }

    /// Numbers `chunks` after the run's last stored chunk, and makes the
    /// record the commit that stores them (see [`RunRecord::commit_after`]).
    pub fn stage(&mut self, chunks: impl IntoIterator<Item = Chunk>) -> Staged {
        let events: Vec<Event> = (self.last_seq + 1..)
            .zip(chunks)
            .map(|(seq, chunk)| Event {
                seq,
                time: Timestamp::now(),
                chunk,
            })
            .collect();
        let expected_version = self.commit_after(self.position(), &events);
        Staged {
            expected_version,
            events,
        }
    }

    fn wrong(&self, transition: &'static str) -> WrongPhase {
        WrongPhase {
            transition,
            from: self.status(),
        }
    }

    /// Suspends a running run on `pending` for its options' time to live,
    /// reminding as `policies` say (each call counted from when it started
    /// waiting: now, unless it waits still from an earlier suspension): a
    /// `tool_call_suspended` or `tool_call_approval` chunk per call, then
    /// `finish{SUSPENDED}`.
    pub fn suspend(
        &mut self,
        pending: PendingCalls,
        policies: &WaitPolicies,
        now: Timestamp,
    ) -> Result<Vec<Chunk>, WrongPhase> {
        if !matches!(self.phase, Phase::Running { .. }) {
            return Err(self.wrong("suspend"));
        }
        let expires_at = now.after(self.options.suspend_ttl);
        let mut calls = pending.into_vec();
        for call in &mut calls {
            call.since.get_or_insert(now);
        }
        let pending = PendingCalls::new(calls).expect("the calls were pending");
        let reminders = policies.reminders(&pending, now, expires_at);
        let mut chunks: Vec<Chunk> = pending
            .iter()
            .map(|waiting| {
                let call = waiting.call.clone();
                match &waiting.waiting {
                    Waiting::Suspended { payload } => Chunk::ToolCallSuspended {
                        call,
                        payload: payload.clone(),
                        expires_at: Some(expires_at),
                    },
                    Waiting::Approval => Chunk::ToolCallApproval { call },
                }
            })
            .collect();
        chunks.push(self.finish_chunk(FinishReason::Suspended, String::new()));
        self.updated_at = now;
        self.phase = Phase::Suspended {
            pending,
            expires_at,
            reminders,
            reminded_at: None,
        };
        Ok(chunks)
    }

    /// Sends the reminders of a suspended run that are due at `now` (all at
    /// once: one reminder), if any is; whether one was. It streams nothing
    /// and leaves the run waiting as it was.
    pub fn remind(&mut self, now: Timestamp) -> Result<bool, WrongPhase> {
        let Phase::Suspended {
            reminders,
            reminded_at,
            ..
        } = &mut self.phase
        else {
            return Err(self.wrong("remind"));
        };
        let due = reminders.partition_point(|at| *at <= now);
        if due == 0 {
            return Ok(false);
        }
        reminders.drain(..due);
        *reminded_at = Some(now);
        Ok(true)
    }

    /// Answers pending calls of a suspended run, each (at its `index` in
    /// the pending list) with its record's answer resolved as its
    /// resolution, all in one step, and gives the run to `lease`: the
    /// continuation's `start`, then each call's result where the answer is
    /// it. Returns the chunks, and what to do now with each call whose
    /// answer approved it or whose tool goes on with it. The pending calls
    /// not answered keep waiting.
    pub fn answer(
        &mut self,
        answers: Vec<Answered>,
        request_id: Option<String>,
        lease: Lease,
    ) -> Result<(Vec<Chunk>, Vec<Continuation>), WrongPhase> {
        let Phase::Suspended { pending, .. } = &self.phase else {
            return Err(self.wrong("answer"));
        };
        let mut still = pending.to_vec();
        let indexes: Vec<usize> = answers.iter().map(|answered| answered.index).collect();
        let calls: Vec<PendingCall> = indexes.iter().map(|index| still[*index].clone()).collect();
        let mut position = 0;
        still.retain(|_| {
            position += 1;
            !indexes.contains(&(position - 1))
        });
        let now = answers
            .first()
            .map_or_else(Timestamp::now, |answered| answered.record.answered_at);
        let mut chunks = vec![Chunk::Start {
            agent_id: self.agent_id.clone(),
            resumed: true,
        }];
        let first_seq = self.last_seq + 1;
        let mut next = Vec::new();
        let mut decisions = Vec::with_capacity(answers.len());
        for (answered, call) in answers.into_iter().zip(calls) {
            let Answered {
                mut record,
                resolution,
                decision,
                ..
            } = answered;
            decisions.push(decision);
            if let Some(request_id) = &request_id {
                self.state.resumes.push(ResumeRecord {
                    request_id: request_id.clone(),
                    tool_call_id: call.call.id.clone(),
                    answer: record.answer.clone(),
                    first_seq,
                });
            }
            match resolution {
                Resolution::Output(output) => chunks.push(self.state.record_result(&call.call, output)),
                Resolution::Execute { edited_args: None } => next.push(Continuation::Run(call.call)),
                Resolution::Execute {
                    edited_args: Some(args),
                } => {
                    let (edited, original_args) = self.state.edit_call(call.call, args);
                    chunks.push(Chunk::ToolCall {
                        call: edited.clone(),
                        original_args: Some(original_args),
                    });
                    next.push(Continuation::Run(edited));
                }
                Resolution::Proceed => match call.waiting {
                    Waiting::Suspended { payload } => {
                        record.proceeds_from = Some(payload.clone());
                        next.push(Continuation::Proceed {
                            call: call.call,
                            payload,
                            answer: record.answer.clone(),
                        });
                    }
                    // Only a suspended tool goes on: an approval runs it.
                    Waiting::Approval => next.push(Continuation::Run(call.call)),
                },
            }
            self.state.answers.push(record);
        }
        self.state.change_by(decisions);
        self.updated_at = now;
        self.phase = Phase::Running {
            lease,
            pending: still,
        };
        Ok((chunks, next))
    }

    /// Gives a running run whose holder is gone to `lease`: the `start` of
    /// the segment the new holder streams. The calls that still wait stay
    /// pending.
    pub fn take_over(&mut self, lease: Lease, now: Timestamp) -> Result<Chunk, WrongPhase> {
        let Phase::Running { lease: held, .. } = &mut self.phase else {
            return Err(self.wrong("take over"));
        };
        *held = lease;
        self.updated_at = now;
        Ok(Chunk::Start {
            agent_id: self.agent_id.clone(),
            resumed: true,
        })
    }

    /// Moves a running run's lease expiry to `expires_at` (a renewal by its
    /// holder).
    pub fn renew_lease(&mut self, expires_at: Timestamp) -> Result<(), WrongPhase> {
        let Phase::Running { lease, .. } = &mut self.phase else {
            return Err(self.wrong("renew the lease of"));
        };
        lease.expires_at = expires_at;
        Ok(())
    }

    /// Takes the calls of a running run's last suspension that still wait
    /// (after a Resume answered another), so that its execution runs the
    /// answered call first and then suspends on them again.
    pub fn take_still_pending(&mut self) -> Result<Vec<PendingCall>, WrongPhase> {
        let Phase::Running { pending, .. } = &mut self.phase else {
            return Err(self.wrong("continue"));
        };
        Ok(std::mem::take(pending))
    }

    /// Completes a running run (`reason` stop or max steps) with the text
    /// of its last step: `finish` with that text.
    pub fn complete(
        &mut self,
        reason: FinishReason,
        final_text: String,
        now: Timestamp,
    ) -> Result<Vec<Chunk>, WrongPhase> {
        if !matches!(self.phase, Phase::Running { .. }) {
            return Err(self.wrong("complete"));
        }
        let finish = self.finish_chunk(reason, final_text.clone());
        self.updated_at = now;
        self.phase = Phase::Completed { final_text };
        Ok(vec![finish])
    }

    /// Fails a running run: `error`, then `finish{ERROR}`.
    pub fn fail(&mut self, failure: RunFailure, now: Timestamp) -> Result<Vec<Chunk>, WrongPhase> {
        if !matches!(self.phase, Phase::Running { .. }) {
            return Err(self.wrong("fail"));
        }
        let chunks = vec![
            Chunk::Error(failure.clone()),
            self.finish_chunk(FinishReason::Error, String::new()),
        ];
        self.updated_at = now;
        self.phase = Phase::Failed { failure };
        Ok(chunks)
    }

    /// Cancels a running or suspended run: each call still pending is
    /// answered as declined because the run was cancelled (after a
    /// `start` that opens the segment, for a suspended run), then
    /// `finish{CANCELLED}`.
    pub fn cancel(&mut self, reason: String, now: Timestamp) -> Result<Vec<Chunk>, WrongPhase> {
        self.cancel_by(reason, None, now)
    }

    /// [`RunRecord::cancel`], recording `decider` (a CancelRun's caller;
    /// `None`: nobody decided, the run's client left) as the decider of
    /// each call still pending.
    pub fn cancel_by(
        &mut self,
        reason: String,
        decider: Option<&Decider>,
        now: Timestamp,
    ) -> Result<Vec<Chunk>, WrongPhase> {
        let pending = match &mut self.phase {
            Phase::Suspended { pending, .. } => pending.to_vec(),
            Phase::Running { pending, .. } => std::mem::take(pending),
            _ => return Err(self.wrong("cancel")),
        };
        let mut chunks = Vec::new();
        if self.status() == RunStatus::Suspended {
            chunks.push(Chunk::Start {
                agent_id: self.agent_id.clone(),
                resumed: true,
            });
        }
        let why = if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        };
        let mut decisions = Vec::new();
        for waiting in pending {
            let declined = ToolOutput::error(format!(
                "The run was cancelled before this call was answered{why}"
            ));
            chunks.push(self.state.record_result(&waiting.call, declined));
            if let Some(decider) = decider {
                decisions.push(decider.decide(&waiting.call.id, DecisionOutcome::Cancelled, now));
            }
        }
        self.state.close_by(decisions);
        chunks.push(self.finish_chunk(FinishReason::Cancelled, String::new()));
        self.updated_at = now;
        self.phase = Phase::Cancelled { reason };
        Ok(chunks)
    }

    /// Expires a suspended run nobody answered in time; it streams nothing
    /// (its last segment ended with the suspension's `finish`).
    pub fn expire(&mut self, now: Timestamp) -> Result<Vec<Chunk>, WrongPhase> {
        let Phase::Suspended { pending, .. } = &self.phase else {
            return Err(self.wrong("expire"));
        };
        let deadline = Decider::deadline();
        let decisions: Vec<_> = pending
            .iter()
            .map(|waiting| deadline.decide(&waiting.call.id, DecisionOutcome::Expired, now))
            .collect();
        self.state.close_by(decisions);
        self.updated_at = now;
        self.phase = Phase::Expired;
        Ok(Vec::new())
    }

    fn finish_chunk(&self, reason: FinishReason, text: String) -> Chunk {
        Chunk::Finish {
            reason,
            usage: self.state.usage,
            text,
        }
    }
}
