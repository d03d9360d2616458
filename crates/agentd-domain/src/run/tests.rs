//! The transitions of a run, and the phases they start from.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::{
    Answer, Args, AskUserPayload, Chunk, Event, FinishReason, Message, RunFailure, SelectionMode,
    SuspendPayload, ToolCall, ToolOutput, WaitPolicies,
};

const NOW: Timestamp = Timestamp(1_796_066_454_000_000);

fn lease(owner: &str) -> Lease {
    Lease {
        owner: owner.into(),
        expires_at: NOW.after(Duration::from_secs(10)),
    }
}

fn running() -> RunRecord {
    let options = RunOptions {
        max_steps: 10,
        suspend_ttl: Duration::from_secs(60),
        ..RunOptions::default()
    };
    let (mut run, start) = RunRecord::start(
        RunId::new(),
        Tenant::default(),
        "assistant".into(),
        options,
        RunState::default(),
        lease("a"),
        NOW,
    );
    assert_eq!(start.expected_version, 0, "nothing is stored before the start");
    assert_eq!(
        start.events.iter().map(|e| (e.seq, &e.chunk)).collect::<Vec<_>>(),
        [(
            1,
            &Chunk::Start {
                agent_id: "assistant".into(),
                resumed: false
            }
        )]
    );
    assert_eq!((run.version(), run.last_seq()), (1, 1));
    // A step's three chunks, appended by its execution.
    run.restore(run.position().after_append(Some(4)), None);
    run
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "ask_user".into(),
        args: json!({"question": "Which plan?"}).into(),
    }
}

fn question(id: &str) -> PendingCall {
    PendingCall {
        call: call(id),
        waiting: Waiting::Suspended {
            payload: SuspendPayload::AskUser(AskUserPayload {
                question: "Which plan?".into(),
                options: Vec::new(),
                selection_mode: SelectionMode::FreeText,
            }),
        },
        since: None,
    }
}

fn answer(id: &str) -> AnswerRecord {
    AnswerRecord {
        tool_call_id: id.into(),
        answer: Answer::Text("Pro".into()),
        answered_at: NOW,
        answered_by: Tenant::default(),
        via: AnswerVia::Resume,
        proceeds_from: None,
    }
}

/// The answer to the pending call at `index`, `id`'s, resolved as
/// `resolution`.
fn one(index: usize, id: &str, resolution: Resolution) -> Answered {
    let decider = crate::Decider::new("sha256:0123abcd", crate::DecisionSource::Grpc);
    Answered {
        index,
        record: answer(id),
        resolution,
        decision: decider.decide(id, crate::DecisionOutcome::Answered, NOW),
    }
}

fn calls(pending: Vec<PendingCall>) -> PendingCalls {
    PendingCalls::new(pending).expect("at least one call")
}

fn suspended_on(ids: &[&str]) -> RunRecord {
    let mut run = running();
    run.suspend(
        calls(ids.iter().map(|id| question(id)).collect()),
        &WaitPolicies::default(),
        NOW,
    )
    .expect("running");
    run
}

#[test]
fn a_suspension_announces_each_call_then_finishes() {
    let mut run = running();
    let approval = PendingCall {
        call: call("b"),
        waiting: Waiting::Approval,
        since: None,
    };
    let chunks = run
        .suspend(
            calls(vec![question("a"), approval]),
            &WaitPolicies::default(),
            NOW,
        )
        .expect("running");
    let expires_at = NOW.after(Duration::from_secs(60));
    assert!(matches!(
        &chunks[0],
        Chunk::ToolCallSuspended { call, expires_at: Some(at), .. } if call.id == "a" && *at == expires_at
    ));
    assert!(matches!(&chunks[1], Chunk::ToolCallApproval { call } if call.id == "b"));
    assert!(matches!(
        &chunks[2],
        Chunk::Finish {
            reason: FinishReason::Suspended,
            ..
        }
    ));
    assert_eq!(chunks.len(), 3);
    assert_eq!(run.status(), RunStatus::Suspended);
    assert_eq!(run.expires_at(), Some(expires_at));
    assert_eq!(run.lease(), None, "a suspended run has no lease");
    assert_eq!(run.pending().len(), 2);
}

#[test]
fn an_answer_gives_the_run_to_its_lease_and_keeps_the_other_calls_waiting() {
    let mut run = suspended_on(&["a", "b"]);
    let output = Resolution::Output(ToolOutput::ok("User answered: Pro"));
    let (chunks, approved) = run
        .answer(vec![one(0, "a", output)], Some("req-1".into()), lease("b"))
        .expect("suspended");
    assert_eq!(approved, vec![]);
    assert!(matches!(&chunks[0], Chunk::Start { resumed: true, .. }));
    assert!(matches!(&chunks[1], Chunk::ToolResult { tool_call_id, .. } if tool_call_id == "a"));
    assert_eq!(run.lease(), Some(&lease("b")));
    assert_eq!(run.expires_at(), None);
    let still = PendingCall {
        since: Some(NOW),
        ..question("b")
    };
    assert_eq!(
        run.pending(),
        &[still],
        "the other call still waits, since it did"
    );
    assert_eq!(run.state.answers, vec![answer("a")]);
    assert_eq!(
        run.state.resumes[0].first_seq, 5,
        "the seq of the continuation's start"
    );
    assert!(
        matches!(run.state.messages.last(), Some(Message::Tool { tool_call_id, .. }) if tool_call_id == "a")
    );
}

#[test]
fn each_change_by_an_answer_a_cancel_or_the_deadline_keeps_its_decisions() {
    use crate::{Decider, DecisionOutcome, DecisionSource, RunEventKind};
    let mut run = suspended_on(&["a", "b"]);
    let output = Resolution::Output(ToolOutput::ok("User answered: Pro"));
    run.answer(vec![one(0, "a", output)], None, lease("b"))
        .expect("suspended");
    let answered = run.state.change_decisions().to_vec();
    assert_eq!(answered.len(), 1);
    assert_eq!(
        (answered[0].tool_call_id.as_str(), answered[0].decided_by.as_str()),
        ("a", "sha256:0123abcd")
    );
    // The call still waiting is closed by a CancelRun, with its caller.
    let ops = Decider::new("ops", DecisionSource::Grpc);
    run.cancel_by(String::new(), Some(&ops), NOW).expect("running");
    // The write that stores the cancel may store the answer too: each
    // event takes its own.
    let changes = run.state.change_decisions();
    assert_eq!(RunEventKind::Resumed.decisions(changes), answered);
    let cancelled = RunEventKind::Cancelled.decisions(changes);
    assert_eq!(cancelled.len(), 1);
    assert_eq!(cancelled[0].tool_call_id, "b");
    assert_eq!(cancelled[0].outcome, DecisionOutcome::Cancelled);
    assert_eq!(run.state.decisions.len(), 2, "every decision is kept");

    let mut expired = suspended_on(&["c"]);
    expired.expire(NOW).expect("suspended");
    let deadline = RunEventKind::Expired.decisions(expired.state.change_decisions());
    assert_eq!(deadline.len(), 1);
    assert_eq!(
        (
            deadline[0].decided_by.as_str(),
            deadline[0].source,
            deadline[0].outcome
        ),
        ("deadline", DecisionSource::Deadline, DecisionOutcome::Expired)
    );
}

#[test]
fn an_approval_returns_the_call_to_run_and_records_no_result() {
    let mut run = running();
    let approval = PendingCall {
        call: call("a"),
        waiting: Waiting::Approval,
        since: None,
    };
    run.suspend(PendingCalls::one(approval), &WaitPolicies::default(), NOW)
        .expect("running");
    let execute = Resolution::Execute { edited_args: None };
    let (chunks, approved) = run
        .answer(vec![one(0, "a", execute)], None, lease("a"))
        .expect("suspended");
    assert_eq!(approved, vec![Continuation::Run(call("a"))]);
    assert_eq!(chunks.len(), 1, "only the continuation's start");
    assert!(run.state.messages.is_empty());
    assert!(run.state.resumes.is_empty(), "no request id, no record of it");
    assert!(run.state.edited_calls.is_empty());
}

#[test]
fn an_approval_with_edited_arguments_runs_them_and_keeps_the_models() {
    let mut run = running();
    run.state.messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![call("a"), call("b")],
    });
    let approval = |id: &str| PendingCall {
        call: call(id),
        waiting: Waiting::Approval,
        since: None,
    };
    run.suspend(
        calls(vec![approval("a"), approval("b")]),
        &WaitPolicies::default(),
        NOW,
    )
    .expect("running");
    let edited: Args = json!({"question": "Which plan, really?"}).into();
    let execute = Resolution::Execute {
        edited_args: Some(edited.clone()),
    };
    let (chunks, approved) = run
        .answer(vec![one(1, "b", execute)], None, lease("a"))
        .expect("suspended");
    let ran = ToolCall {
        args: edited.clone(),
        ..call("b")
    };
    assert_eq!(
        approved,
        vec![Continuation::Run(ran.clone())],
        "the tool runs the edited arguments"
    );
    assert_eq!(
        chunks[1],
        Chunk::ToolCall {
            call: ran.clone(),
            original_args: Some(call("b").args),
        },
        "the continuation reports the call as it runs"
    );
    let Some(Message::Assistant { tool_calls, .. }) = run.state.messages.last() else {
        panic!("the model's message")
    };
    assert_eq!(tool_calls, &[call("a"), ran.clone()], "the model sees what ran");
    assert_eq!(
        run.state.edited_calls,
        vec![EditedCall {
            call: ran,
            original_args: call("b").args,
        }]
    );
    let still = PendingCall {
        since: Some(NOW),
        ..approval("a")
    };
    assert_eq!(
        run.pending(),
        &[still],
        "the other call still waits, since it did"
    );
}

/// Each transition, asked of every phase it does not start from, is
/// refused by name and changes nothing.
#[test]
fn every_transition_checks_the_phase_it_starts_from() {
    let mut completed = running();
    completed
        .complete(FinishReason::Stop, String::new(), NOW)
        .expect("running");
    let mut expired = suspended_on(&["a"]);
    expired.expire(NOW).expect("suspended");
    let running = running();
    let suspended = suspended_on(&["a"]);
    let failure = || RunFailure {
        code: "x".into(),
        message: "y".into(),
    };
    type Attempt = fn(&mut RunRecord) -> Result<(), WrongPhase>;
    let attempts: [(&str, Attempt, &[RunStatus]); 8] = [
        (
            "suspend",
            |run| {
                run.suspend(PendingCalls::one(question("b")), &WaitPolicies::default(), NOW)
                    .map(drop)
            },
            &[RunStatus::Running],
        ),
        (
            "answer",
            |run| {
                let output = Resolution::Output(ToolOutput::ok("x"));
                run.answer(vec![one(0, "a", output)], None, lease("b")).map(drop)
            },
            &[RunStatus::Suspended],
        ),
        (
            "take over",
            |run| run.take_over(lease("b"), NOW).map(drop),
            &[RunStatus::Running],
        ),
        (
            "renew the lease of",
            |run| run.renew_lease(NOW),
            &[RunStatus::Running],
        ),
        (
            "continue",
            |run| run.take_still_pending().map(drop),
            &[RunStatus::Running],
        ),
        (
            "complete",
            |run| run.complete(FinishReason::Stop, String::new(), NOW).map(drop),
            &[RunStatus::Running],
        ),
        (
            "cancel",
            |run| run.cancel(String::new(), NOW).map(drop),
            &[RunStatus::Running, RunStatus::Suspended],
        ),
        ("expire", |run| run.expire(NOW).map(drop), &[RunStatus::Suspended]),
    ];
    let runs = [running, suspended, completed, expired];
    for (transition, attempt, allowed) in attempts {
        for run in &runs {
            let mut tried = run.clone();
            let outcome = attempt(&mut tried);
            if allowed.contains(&run.status()) {
                assert!(outcome.is_ok(), "{transition} from {}: {outcome:?}", run.status());
            } else {
                assert_eq!(
                    outcome,
                    Err(WrongPhase {
                        transition,
                        from: run.status()
                    })
                );
                assert_eq!(&tried, run, "a refused {transition} changed nothing");
            }
        }
    }
    let mut failing = runs[0].clone();
    assert!(failing.fail(failure(), NOW).is_ok());
    assert!(
        failing.fail(failure(), NOW).is_err(),
        "a failed run cannot fail again"
    );
}

#[test]
fn a_commit_numbers_its_chunks_after_the_stored_ones_and_moves_the_version() {
    let mut run = running();
    let stored = run.position();
    assert_eq!((stored.version, stored.last_seq), (2, 4));
    let chunks = run
        .suspend(PendingCalls::one(question("a")), &WaitPolicies::default(), NOW)
        .expect("running");
    let staged = run.stage(chunks);
    assert_eq!(
        staged.expected_version, 2,
        "the store must still hold the read version"
    );
    assert_eq!(
        staged.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [5, 6],
        "the suspension's chunks continue the seqs"
    );
    assert_eq!((run.version(), run.last_seq()), (3, 6));

    // An execution commits chunks it numbered itself, after appends the
    // record did not see.
    let mut again = running();
    let appended = again.position().after_append(Some(7));
    let events = [8, 9].map(|seq| Event {
        seq,
        time: NOW,
        chunk: Chunk::TextDelta { text: "x".into() },
    });
    assert_eq!(again.commit_after(appended, &events), 3);
    assert_eq!((again.version(), again.last_seq()), (4, 9));
    assert_eq!(
        again.commit_after(again.position(), &[]),
        4,
        "a commit of no chunks"
    );
    assert_eq!((again.version(), again.last_seq()), (5, 9));
}

#[test]
fn a_suspended_run_always_waits_on_a_call() {
    assert_eq!(PendingCalls::new(Vec::new()), None);
    let suspended = suspended_on(&["a"]);
    let mut json = serde_json::to_value(&suspended).expect("json");
    json["phase"]["suspended"]["pending"] = json!([]);
    let read = serde_json::from_value::<RunRecord>(json);
    assert!(read.is_err(), "an empty suspension does not read back");
    let json = serde_json::to_value(&suspended).expect("json");
    assert_eq!(
        serde_json::from_value::<RunRecord>(json).expect("reads back"),
        suspended
    );
}

#[test]
fn cancelling_declines_what_waits_and_opens_a_segment_only_after_a_suspension() {
    let mut suspended = suspended_on(&["a"]);
    let chunks = suspended
        .cancel("no longer needed".into(), NOW)
        .expect("suspended");
    assert!(matches!(&chunks[0], Chunk::Start { resumed: true, .. }));
    assert!(matches!(
        &chunks[1],
        Chunk::ToolResult { tool_call_id, is_error: true, content, .. }
            if tool_call_id == "a" && content.ends_with(": no longer needed")
    ));
    assert!(matches!(
        &chunks[2],
        Chunk::Finish {
            reason: FinishReason::Cancelled,
            ..
        }
    ));
    assert_eq!(
        suspended.phase,
        Phase::Cancelled {
            reason: "no longer needed".into()
        }
    );
    assert!(suspended.pending().is_empty());

    let mut running = running();
    let chunks = running.cancel(String::new(), NOW).expect("running");
    assert_eq!(chunks.len(), 1, "a running run's segment is open already");
    assert_eq!(running.lease(), None);
}

#[test]
fn a_run_ends_in_the_phase_that_says_how() {
    let mut done = running();
    let chunks = done
        .complete(FinishReason::Stop, "Pro it is.".into(), NOW)
        .expect("running");
    assert!(
        matches!(&chunks[..], [Chunk::Finish { reason: FinishReason::Stop, text, .. }] if text == "Pro it is.")
    );
    assert_eq!(
        done.phase,
        Phase::Completed {
            final_text: "Pro it is.".into()
        }
    );

    let mut failed = running();
    let failure = RunFailure {
        code: "provider_error".into(),
        message: "boom".into(),
    };
    let chunks = failed.fail(failure.clone(), NOW).expect("running");
    assert_eq!(chunks[0], Chunk::Error(failure.clone()));
    assert!(matches!(
        &chunks[1],
        Chunk::Finish {
            reason: FinishReason::Error,
            ..
        }
    ));
    assert_eq!(failed.phase, Phase::Failed { failure });

    let mut expired = suspended_on(&["a"]);
    assert!(!expired.expiry_due(NOW));
    assert!(expired.expiry_due(NOW.after(Duration::from_secs(60))));
    assert!(
        expired.expire(NOW).expect("suspended").is_empty(),
        "the suspension's finish ended its segment"
    );
    assert_eq!(expired.phase, Phase::Expired);
    assert_eq!(expired.expires_at(), None);
}

#[test]
fn a_lease_is_renewed_or_taken_over_while_running() {
    let mut run = running();
    run.renew_lease(NOW.after(Duration::from_secs(30)))
        .expect("running");
    assert_eq!(
        run.lease().map(|l| l.expires_at),
        Some(NOW.after(Duration::from_secs(30)))
    );
    let start = run.take_over(lease("b"), NOW).expect("running");
    assert!(matches!(start, Chunk::Start { resumed: true, .. }));
    assert_eq!(run.lease(), Some(&lease("b")));
}
