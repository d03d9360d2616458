//! The run lifecycle at INFO: one line when a run starts, suspends (each
//! call it waits on, with its tool), is reminded, is resumed, finishes
//! (why, after how many steps, how long after it started) or expires, and one for each
//! decision on a call (who decided, through what). Every line names the
//! run, its agent, tenant and thread (when it has one) in its own fields,
//! wherever it is logged from. It only logs; it never changes a run.

use crate::domain::{Decision, FinishReason, PendingCall, RunRecord, Timestamp};

/// The `reason` field of a finish line.
fn reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Suspended => "suspended",
        FinishReason::MaxSteps => "max_steps",
        FinishReason::Cancelled => "cancelled",
        FinishReason::Error => "error",
    }
}

/// Milliseconds from `since` to now.
fn millis_since(since: Timestamp) -> i64 {
    Timestamp::now().0.saturating_sub(since.0) / 1_000
}

fn thread(run: &RunRecord) -> Option<&str> {
    run.thread.as_ref().map(|link| link.id.as_str())
}

/// A run was stored and starts executing.
pub(crate) fn started(run: &RunRecord) {
    tracing::info!(
        run_id = %run.id,
        agent = %run.agent_id,
        tenant = %run.tenant,
        thread_id = thread(run),
        "run started"
    );
}

/// A run's suspension was stored: one line per call it waits on.
pub(crate) fn suspended(run: &RunRecord, pending: &[PendingCall]) {
    for waiting in pending {
        tracing::info!(
            run_id = %run.id,
            agent = %run.agent_id,
            tenant = %run.tenant,
            thread_id = thread(run),
            tool = %waiting.call.name,
            tool_call_id = %waiting.call.id,
            "run suspended"
        );
    }
}

/// A Resume's answers were stored; the run goes on: one line per answer,
/// with who decided it (the answers' decisions need no lines of their own).
pub(crate) fn resumed(run: &RunRecord) {
    for decision in run.state.change_decisions() {
        decision_line(run, decision, "run resumed");
    }
}

/// Calls of a run were decided: one line each, with who decided, through
/// what, and the rule's expression for a rule.
pub(crate) fn decided(run: &RunRecord, decisions: &[Decision]) {
    for decision in decisions {
        decision_line(run, decision, "call decided");
    }
}

/// One line of `decision` in `run`, with `message`.
fn decision_line(run: &RunRecord, decision: &Decision, message: &'static str) {
    let rule = (!decision.rule.is_empty()).then_some(decision.rule.as_str());
    tracing::info!(
        run_id = %run.id,
        agent = %run.agent_id,
        tenant = %run.tenant,
        thread_id = thread(run),
        tool_call_id = %decision.tool_call_id,
        outcome = decision.outcome.as_str(),
        decided_by = %decision.decided_by,
        source = decision.source.as_str(),
        rule,
        message
    );
}

/// A run finished for good (not a suspension).
pub(crate) fn finished(run: &RunRecord, why: FinishReason) {
    tracing::info!(
        run_id = %run.id,
        agent = %run.agent_id,
        tenant = %run.tenant,
        thread_id = thread(run),
        reason = reason(why),
        steps = run.state.steps,
        duration_ms = millis_since(run.created_at),
        "run finished"
    );
}

/// A suspended run's reminder was stored: the calls it still waits on,
/// `suspended_since` after it suspended.
pub(crate) fn reminded(run: &RunRecord, suspended_since: Timestamp) {
    tracing::info!(
        run_id = %run.id,
        agent = %run.agent_id,
        tenant = %run.tenant,
        thread_id = thread(run),
        pending = run.pending().len(),
        suspended_ms = millis_since(suspended_since),
        "run reminded"
    );
}

/// A suspended run was marked expired, `suspended_since` after it
/// suspended.
pub(crate) fn expired(run: &RunRecord, suspended_since: Timestamp) {
    tracing::info!(
        run_id = %run.id,
        agent = %run.agent_id,
        tenant = %run.tenant,
        thread_id = thread(run),
        suspended_ms = millis_since(suspended_since),
        "run expired"
    );
}
