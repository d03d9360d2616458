//! Restarts with real processes: the `agentd` binary serves a suspended run,
//! is killed, and a new process on the same data dir resumes it. Also checks
//! that SIGTERM shuts the server down cleanly.

use std::time::Duration;

use agentd::pb;
use agentd::pb::agent_chunk::Chunk;

use crate::helpers::{
    ask_user_payload, collect, finish, finish_reason, resume_request, run_id, status_of, suspensions, text,
    tool_results,
};
use crate::process::{get_run, seqs, stream_prompt, ServerProcess};

/// A run suspended in one process is resumed by another after a SIGKILL.
#[tokio::test]
async fn suspended_run_survives_a_hard_kill() {
    let data = tempfile::tempdir().expect("temp dir");

    // First process: the run suspends on ask_user.
    let mut first = ServerProcess::start(data.path());
    let mut client = first.client().await;
    let opening = stream_prompt(&mut client, "Help me pick a plan").await;
    assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
    let run = run_id(&opening);
    let suspended = suspensions(&opening);
    assert_eq!(suspended.len(), 1, "one suspension: {opening:?}");
    let suspended = &suspended[0];
    assert_eq!(suspended.tool_name, "ask_user");
    let question = ask_user_payload(suspended);
    assert!(
        question.options.iter().any(|o| o.label == "Pro"),
        "the question offers Pro: {question:?}"
    );
    let last_seq = opening.last().unwrap().seq;
    assert_eq!(
        seqs(&opening),
        (1..=last_seq).collect::<Vec<_>>(),
        "seqs of the first stream"
    );

    // The suspension was acknowledged; a crash right now must not lose it.
    drop(client);
    first.kill_hard();

    // Second process on the same data dir.
    let second = ServerProcess::start(data.path());
    assert_ne!(second.pid(), first.pid());
    let mut client = second.client().await;
    let stored = get_run(&mut client, &run).await;
    assert_eq!(status_of(&stored), pb::RunStatus::Suspended);
    assert_eq!(stored.run_id, run);
    assert_eq!(stored.last_seq, last_seq);
    assert_eq!(stored.pending.len(), 1, "pending calls: {:?}", stored.pending);
    let pending = &stored.pending[0];
    assert_eq!(pending.tool_call_id, suspended.tool_call_id);
    assert_eq!(pending.tool_name, "ask_user");
    assert!(!pending.awaiting_approval);
    assert_eq!(
        pending.suspend_payload, suspended.suspend_payload,
        "the payload survived the restart"
    );
    let stored_question = match pending.suspend_payload.as_ref().and_then(|p| p.kind.clone()) {
        Some(pb::suspend_payload::Kind::AskUser(payload)) => payload,
        other => panic!("pending call has no ask_user payload: {other:?}"),
    };
    assert_eq!(stored_question, question);

    // Resume it there.
    let answer = pb::resume_request::Answer::Text("Pro".into());
    let stream = client
        .resume(resume_request(&run, &pending.tool_call_id, answer))
        .await
        .expect("Resume")
        .into_inner();
    let resumed = collect(stream).await.expect("Resume stream");
    assert!(
        resumed.iter().all(|c| c.run_id == run),
        "every chunk names the run"
    );
    match resumed.first().and_then(|c| c.chunk.as_ref()) {
        Some(Chunk::Start(start)) => assert!(start.resumed, "start of a resumption: {start:?}"),
        other => panic!("the resumption must open with start: {other:?}"),
    }
    let results = tool_results(&resumed);
    assert_eq!(results.len(), 1, "one tool result: {resumed:?}");
    assert_eq!(results[0].tool_call_id, suspended.tool_call_id);
    assert_eq!(results[0].tool_name, "ask_user");
    assert_eq!(results[0].content, "User answered: Pro");
    assert!(!results[0].is_error);
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);
    let final_text = finish(&resumed).text;
    assert!(final_text.contains("Pro"), "final text: {final_text:?}");
    assert!(
        text(&resumed).contains("Pro"),
        "streamed text: {:?}",
        text(&resumed)
    );

    // seq continues across the restart, without gap or repeat.
    let end = resumed.last().unwrap().seq;
    assert_eq!(
        seqs(&resumed),
        (last_seq + 1..=end).collect::<Vec<_>>(),
        "seqs of the resumption"
    );

    let done = get_run(&mut client, &run).await;
    assert_eq!(status_of(&done), pb::RunStatus::Completed);
    assert!(done.pending.is_empty(), "no pending calls: {:?}", done.pending);
    assert_eq!(done.last_seq, end);
    assert!(
        done.final_text.contains("Pro"),
        "final text: {:?}",
        done.final_text
    );
}

/// SIGTERM stops the server cleanly: exit status 0 within a few seconds,
/// even with a client connected, and the run it served is intact.
#[tokio::test]
async fn sigterm_shuts_down_gracefully() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut server = ServerProcess::start(data.path());
    let mut client = server.client().await;
    let opening = stream_prompt(&mut client, "Help me pick a plan").await;
    assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
    let run = run_id(&opening);

    // The client stays connected while the server shuts down.
    let status = server.terminate(Duration::from_secs(10)).await;
    assert!(
        status.success(),
        "agentd exited with {status}\n{}",
        server.log_text()
    );
    assert!(
        server.log_text().contains("agentd stopped"),
        "agentd logs its stop:\n{}",
        server.log_text()
    );
    drop(client);

    // The suspended run is still there for the next process.
    let next = ServerProcess::start(data.path());
    let mut client = next.client().await;
    let stored = get_run(&mut client, &run).await;
    assert_eq!(status_of(&stored), pb::RunStatus::Suspended);
    assert_eq!(stored.last_seq, opening.last().unwrap().seq);
}
