//! Leases: the replica executing a running run holds a lease on it (owner
//! and expiry, stored with the run) and renews it with every write it makes
//! and at least every `renew_every` while it executes. A lease that nobody
//! renewed for `ttl` means its holder is gone: any replica may then take the
//! run over (see `lifecycle/recovery.rs`). A shared store that knows which
//! replicas live tells of a dead holder sooner; the lease remains the
//! backstop for a holder that lives but is stuck.

use std::time::Duration;

use crate::config::ServerConfig;
use crate::domain::{AnswerRecord, Continuation, Lease, RunRecord, Timestamp, ToolCall};

/// How leases are held and how orphaned runs are found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseSettings {
    /// How long a lease holds without renewal; a replica that stops
    /// renewing (a crash, a partition from the store) loses its runs to
    /// another replica after this long.
    pub ttl: Duration,
    /// How often an executing replica renews its leases when it has no
    /// other write to make; well below `ttl`.
    pub renew_every: Duration,
    /// How often each replica looks for orphaned running runs (lease
    /// expired, or holder gone); zero disables the search (runs are then
    /// only taken over at startup, for a store that one process owns).
    pub recovery_interval: Duration,
    /// How long a run not yet stored (a start's, or a Resume's claim) may
    /// go on before it is written, when its execution reaches no durable
    /// point sooner (see `emitter.rs`).
    pub first_write_deadline: Duration,
}

impl Default for LeaseSettings {
    /// As `[server]` sets them by default.
    fn default() -> Self {
        Self::of(&ServerConfig::default())
    }
}

impl LeaseSettings {
    /// As `server` sets them (`lease_ttl`, `lease_renew`,
    /// `recovery_interval`).
    pub fn of(server: &ServerConfig) -> Self {
        Self {
            ttl: server.lease_ttl,
            renew_every: server.lease_renew,
            recovery_interval: server.recovery_interval,
            first_write_deadline: server.first_write_deadline,
        }
    }

    /// A lease for `owner` from now.
    pub(crate) fn lease(&self, owner: &str) -> Lease {
        Lease {
            owner: owner.to_owned(),
            expires_at: self.expiry(),
        }
    }

    /// When a lease renewed now expires.
    pub(crate) fn expiry(&self) -> Timestamp {
        Timestamp::now().after(self.ttl)
    }
}

/// A fresh replica id: unique per process, time-ordered.
pub(crate) fn new_replica_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Calls that a Resume claimed but that did not end: calls of the last
/// model step with neither a result nor a pending entry. Each goes on from
/// its latest answer when its tool was going on with it (see
/// `AnswerRecord::proceeds_from`), and runs otherwise (it was approved).
/// Empty for any run that is not right after such a claim.
pub(crate) fn unfinished_calls(run: &RunRecord) -> Vec<Continuation> {
    use crate::domain::Message;
    let state = &run.state;
    let Some(calls) = state.messages.iter().rev().find_map(|message| match message {
        Message::Assistant { tool_calls, .. } => Some(tool_calls),
        _ => None,
    }) else {
        return Vec::new();
    };
    let answered = |id: &str| {
        state
            .messages
            .iter()
            .any(|message| matches!(message, Message::Tool { tool_call_id, .. } if tool_call_id == id))
    };
    let pending = |id: &str| run.pending().iter().any(|p| p.call.id == id);
    let continuation = |call: &ToolCall| {
        let latest = state
            .answers
            .iter()
            .rev()
            .find(|answer| answer.tool_call_id == call.id);
        match latest {
            Some(AnswerRecord {
                answer,
                proceeds_from: Some(payload),
                ..
            }) => Continuation::Proceed {
                call: call.clone(),
                payload: payload.clone(),
                answer: answer.clone(),
            },
            _ => Continuation::Run(call.clone()),
        }
    };
    calls
        .iter()
        .filter(|call| !answered(&call.id) && !pending(&call.id))
        .map(continuation)
        .collect()
}

/// Whether `run`'s lease has expired at `now` (a running run without a
/// lease counts as expired).
pub(crate) fn lease_expired(run: &RunRecord, now: Timestamp) -> bool {
    run.lease().is_none_or(|lease| lease.expires_at <= now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Message;
    use crate::domain::{
        Answer, AnswerVia, Answered, PendingCall, PendingCalls, Resolution, RunState, Waiting,
    };

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "human_review".into(),
            args: serde_json::json!({}).into(),
        }
    }

    /// A running run right after a step that made `calls`.
    fn run_after_step(calls: &[&str]) -> RunRecord {
        let state = RunState {
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: calls.iter().map(|id| call(id)).collect(),
                },
            ],
            ..RunState::default()
        };
        let (run, _) = RunRecord::start(
            crate::domain::RunId::new(),
            Default::default(),
            "a".into(),
            Default::default(),
            state,
            Lease::vacant(),
            Timestamp::now(),
        );
        run
    }

    #[test]
    fn approved_calls_are_those_without_result_or_pending_entry() {
        let mut run = run_after_step(&["a", "b", "c"]);
        run.state
            .messages
            .push(Message::tool("a", "human_review", "done", false));
        // b and c waited for approval; b is approved, and c still waits.
        let approval = |id: &str| PendingCall {
            call: call(id),
            waiting: Waiting::Approval,
            since: None,
        };
        let both = PendingCalls::new(vec![approval("b"), approval("c")]).expect("two calls");
        run.suspend(both, &Default::default(), Timestamp::now())
            .expect("running");
        let approved = AnswerRecord {
            tool_call_id: "b".into(),
            answer: Answer::Approval {
                approved: true,
                reason: String::new(),
                edited_args: None,
            },
            answered_at: Timestamp::now(),
            answered_by: Default::default(),
            via: AnswerVia::Resume,
            proceeds_from: None,
        };
        let execute = Resolution::Execute { edited_args: None };
        let decider = crate::domain::Decider::new("", crate::domain::DecisionSource::Grpc);
        let answered = Answered {
            index: 0,
            record: approved,
            resolution: execute,
            decision: decider.decide("b", crate::domain::DecisionOutcome::Approved, Timestamp::now()),
        };
        run.answer(vec![answered], None, Lease::vacant())
            .expect("suspended");
        assert_eq!(run.pending().len(), 1);
        assert_eq!(run.pending()[0].call, call("c"));
        assert_eq!(unfinished_calls(&run), vec![Continuation::Run(call("b"))]);
    }

    #[test]
    fn a_run_between_steps_has_no_approved_calls() {
        assert!(unfinished_calls(&run_after_step(&[])).is_empty());
        let mut run = run_after_step(&["a"]);
        run.state
            .messages
            .push(Message::tool("a", "human_review", "done", false));
        assert!(unfinished_calls(&run).is_empty());
        // The latest assistant message decides, not an earlier one.
        run.state.messages.push(Message::Assistant {
            content: "All done.".into(),
            tool_calls: Vec::new(),
        });
        assert!(unfinished_calls(&run).is_empty());
    }

    #[test]
    fn leases_expire_at_their_time() {
        let settings = LeaseSettings::default();
        let lease = settings.lease("replica-a");
        assert_eq!(lease.owner, "replica-a");
        let now = Timestamp::now();
        assert!(lease.expires_at > now);
        assert!(lease.expires_at <= now.after(settings.ttl));
    }
}
