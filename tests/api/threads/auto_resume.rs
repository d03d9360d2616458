//! Auto-resume: the next message on a thread answers the question its
//! latest run is suspended on, as free text, a label, a number or several
//! numbers; a message that fits no option changes nothing; a run suspended
//! on something else is FAILED_PRECONDITION. GetThread tells who answered,
//! how and when.

use agentd::pb;
use tonic::Code;
use tonic_types::StatusExt;

use super::{auto_resume, get_thread, on_thread, stream};
use crate::helpers::{finish_reason, kinds, run_id, status_of, text, tool_results, TestServer};

/// Starts a run on `thread` that suspends on the question `prompt` asks.
async fn suspended(server: &TestServer, thread: &str, prompt: &str) -> String {
    let chunks = stream(server, on_thread(thread, prompt))
        .await
        .expect("StreamAgent");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Suspended);
    run_id(&chunks)
}

/// Auto-resumes `thread` with `message`; the continuation must be of `run`.
async fn answer(server: &TestServer, thread: &str, run: &str, message: &str) -> Vec<pb::AgentChunk> {
    let chunks = stream(server, auto_resume(thread, message))
        .await
        .expect("auto-resume");
    assert_eq!(run_id(&chunks), run, "the continuation of the suspended run");
    assert_eq!(kinds(&chunks)[..2], ["start", "tool_result"]);
    match &chunks[0].chunk {
        Some(pb::agent_chunk::Chunk::Start(start)) => assert!(start.resumed),
        other => panic!("not a start: {other:?}"),
    }
    chunks
}

#[tokio::test]
async fn free_text_is_the_answer() {
    let server = TestServer::start().await;
    let run = suspended(&server, "free", "ask me a free question").await;
    let chunks = answer(&server, "free", &run, "Ada Lovelace").await;
    assert_eq!(tool_results(&chunks)[0].content, "User answered: Ada Lovelace");
    assert_eq!(text(&chunks), "Thanks! You answered: Ada Lovelace.");
    let stored = server.get_run(&run).await;
    assert_eq!(status_of(&stored), pb::RunStatus::Completed);
    // Decided through the thread, by the caller (an open server: no name).
    assert_eq!(stored.decisions.len(), 1);
    assert_eq!(stored.decisions[0].source(), pb::DecisionSource::Thread);
    assert_eq!(stored.decisions[0].outcome(), pb::DecisionOutcome::Answered);
}

#[tokio::test]
async fn a_label_or_its_number_answers_a_single_select() {
    let server = TestServer::start().await;
    let run = suspended(&server, "label", "pick a plan").await;
    let chunks = answer(&server, "label", &run, "enterprise").await;
    assert_eq!(tool_results(&chunks)[0].content, "User answered: Enterprise");

    // The next message on the finished thread starts a run as usual.
    let next = suspended(&server, "label", "pick a plan again").await;
    assert_ne!(next, run);
    let chunks = answer(&server, "label", &next, "2").await;
    assert_eq!(tool_results(&chunks)[0].content, "User answered: Pro");
}

#[tokio::test]
async fn several_numbers_answer_a_multi_select() {
    let server = TestServer::start().await;
    let run = suspended(&server, "multi", "multi toppings please").await;
    let chunks = answer(&server, "multi", &run, "1, 3").await;
    assert_eq!(
        tool_results(&chunks)[0].content,
        "User answered: Mushrooms, Peppers"
    );
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
}

#[tokio::test]
async fn a_message_that_matches_no_option_changes_nothing() {
    let server = TestServer::start().await;
    let run = suspended(&server, "nomatch", "pick a plan").await;
    let before = server.get_run(&run).await;
    for message in ["Premium", "7", "1, 2"] {
        let status = stream(&server, auto_resume("nomatch", message))
            .await
            .expect_err(message);
        assert_eq!(status.code(), Code::InvalidArgument, "{message}");
        assert!(
            status.message().contains("Basic, Pro, Enterprise"),
            "{}",
            status.message()
        );
        let bad_request = status.get_details_bad_request().expect("BadRequest");
        assert_eq!(bad_request.field_violations[0].field, "prompt");
        let info = status.get_details_error_info().expect("ErrorInfo");
        assert_eq!(info.metadata["valid_labels"], "Basic, Pro, Enterprise");
    }
    let after = server.get_run(&run).await;
    assert_eq!(after, before, "the run is exactly as it was");
    let thread = get_thread(&server, "nomatch").await.expect("GetThread");
    assert_eq!(thread.run_ids, std::slice::from_ref(&run));
    // Still answerable.
    answer(&server, "nomatch", &run, "Basic").await;
}

#[tokio::test]
async fn a_run_waiting_for_approval_is_not_auto_resumed() {
    let server = TestServer::start().await;
    let request = pb::StreamAgentRequest {
        options: Some(pb::RunOptions {
            require_tool_approval: true,
            ..Default::default()
        }),
        // A tool of the run's own, which the run approves before the
        // caller executes it.
        tools: vec![pb::ToolDefinition {
            name: "lookup".into(),
            description: "Looks an order up.".into(),
            input_schema: Some(agentd::grpc::convert::json_to_struct(
                &serde_json::json!({"type": "object"}),
            )),
            ..Default::default()
        }],
        ..on_thread("approval", r#"call lookup {"order": 42}"#)
    };
    let chunks = stream(&server, request).await.expect("StreamAgent");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Suspended);
    let run = run_id(&chunks);
    let status = stream(&server, auto_resume("approval", "yes"))
        .await
        .expect_err("approval");
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(status.message().contains(&run), "{}", status.message());
    assert_eq!(
        status.get_details_error_info().expect("ErrorInfo").reason,
        "NOT_AUTO_RESUMABLE"
    );
    assert_eq!(status_of(&server.get_run(&run).await), pb::RunStatus::Suspended);
}

#[tokio::test]
async fn get_thread_tells_who_answered_by_auto_resume_and_when() {
    let server = TestServer::start().await;
    let run = suspended(&server, "who", "pick a plan").await;
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    answer(&server, "who", &run, "Pro").await;
    let thread = get_thread(&server, "who").await.expect("GetThread");
    assert_eq!(thread.latest_run_id, run);
    assert_eq!(thread.latest_run_status, pb::RunStatus::Completed as i32);
    let answered: Vec<&pb::ThreadMessage> = thread.messages.iter().filter(|m| m.answer.is_some()).collect();
    assert_eq!(answered.len(), 1);
    let message = answered[0];
    assert_eq!(message.role, pb::Role::Tool as i32);
    assert_eq!(message.run_id, run);
    assert_eq!(message.content, "User answered: Pro");
    let result = message.tool_result.as_ref().expect("tool result");
    let answer = message.answer.as_ref().expect("answer");
    assert_eq!(answer.tool_call_id, result.tool_call_id);
    assert_eq!(answer.text, "Pro");
    assert_eq!(answer.answered_by, "default");
    assert_eq!(answer.source, pb::AnswerSource::AutoResume as i32);
    let at = answer.answered_at.expect("answered_at").seconds;
    assert!(at >= before - 1 && at <= before + 60, "{at} vs {before}");
    // The user's message is the answer, not a message of its own.
    assert!(!super::transcript(&thread).contains(&"user: Pro".to_owned()));
}

#[tokio::test]
async fn a_retried_auto_resume_with_its_request_id_replays_the_answer() {
    let server = TestServer::start().await;
    let run = suspended(&server, "retry", "pick a plan").await;
    let request = pb::StreamAgentRequest {
        request_id: "answer-1".into(),
        ..auto_resume("retry", "pro")
    };
    let first = stream(&server, request.clone()).await.expect("auto-resume");
    assert_eq!(run_id(&first), run);
    let again = stream(&server, request).await.expect("the retry");
    assert_eq!(again, first, "the same continuation, replayed");
    let thread = get_thread(&server, "retry").await.expect("GetThread");
    assert_eq!(thread.run_ids.len(), 1, "no second run");
    let answers = thread.messages.iter().filter(|m| m.answer.is_some()).count();
    assert_eq!(answers, 1, "answered once");
}
