//! Every prompt shape end to end: stream -> suspension with the exact
//! payload -> Resume -> answer seen by the model -> final text.

use agentd::pb::{self, FinishReason, RunStatus, SelectionMode};
use tonic_types::StatusExt as _;

use crate::helpers::*;

fn option(label: &str, description: &str) -> pb::AskUserOption {
    pb::AskUserOption {
        label: label.into(),
        description: description.into(),
    }
}

/// Asserts `chunks` is a suspension on exactly one ask_user call and that
/// GetRun agrees; returns the payload.
async fn expect_one_question(server: &TestServer, chunks: &[pb::AgentChunk]) -> pb::AskUserPayload {
    let suspended = expect_one_suspension(server, chunks).await;
    assert!(
        suspended.expires_at.is_some(),
        "a suspension says when it expires"
    );
    ask_user_payload(&suspended)
}

/// Asserts the continuation after an answer and that GetRun agrees.
async fn expect_answered(server: &TestServer, chunks: &[pb::AgentChunk], answer: &str) {
    assert_eq!(kinds(&chunks[..2]), ["start", "tool_result"]);
    let Some(pb::agent_chunk::Chunk::Start(start)) = &chunks[0].chunk else {
        unreachable!()
    };
    assert!(start.resumed, "a Resume stream says it is a resumption");
    let result = &tool_results(chunks)[0];
    assert_eq!(result.content, format!("User answered: {answer}"));
    assert!(!result.is_error);
    assert_eq!(finish_reason(chunks), FinishReason::Stop);
    let final_text = finish(chunks).text;
    assert_eq!(final_text, format!("Thanks! You answered: {answer}."));
    assert_eq!(text(chunks), final_text, "the final text is what was streamed");

    let run = server.get_run(&run_id(chunks)).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert!(run.pending.is_empty());
    assert_eq!(run.final_text, final_text);
    assert_eq!(run.steps, 2);
    assert_eq!(run.last_seq, chunks.last().unwrap().seq);
    let usage = run.usage.unwrap();
    assert!(usage.input_tokens > 0 && usage.output_tokens > 0);
}

#[tokio::test]
async fn single_select_question_is_answered_with_a_label() {
    let server = TestServer::start().await;
    let chunks = server.stream("Help me pick a plan").await;
    let payload = expect_one_question(&server, &chunks).await;
    assert_eq!(
        payload,
        pb::AskUserPayload {
            question: "Which plan should I set up for you?".into(),
            options: vec![
                option("Basic", "One project, community support"),
                option("Pro", "Unlimited projects, email support"),
                option("Enterprise", "SSO, audit logs and a dedicated engineer"),
            ],
            selection_mode: SelectionMode::SingleSelect as i32,
        }
    );
    let continuation = server.resume_text(&run_id(&chunks), "Pro").await.unwrap();
    expect_answered(&server, &continuation, "Pro").await;
}

#[tokio::test]
async fn multi_select_question_is_answered_with_labels_joined() {
    let server = TestServer::start().await;
    let chunks = server.stream("multi: choose my toppings").await;
    let payload = expect_one_question(&server, &chunks).await;
    assert_eq!(payload.selection_mode, SelectionMode::MultiSelect as i32);
    assert_eq!(payload.question, "Which toppings do you want on your pizza?");
    assert_eq!(payload.options.len(), 4);
    assert_eq!(
        payload.options[3],
        option("Basil", "Fresh basil leaves, added after baking")
    );

    let continuation = server
        .resume_labels(&run_id(&chunks), &["Olives", "Basil"])
        .await
        .unwrap();
    expect_answered(&server, &continuation, "Olives, Basil").await;
}

#[tokio::test]
async fn free_text_question_has_no_options_and_unspecified_mode() {
    let server = TestServer::start().await;
    let chunks = server.stream("free text please").await;
    let payload = expect_one_question(&server, &chunks).await;
    assert_eq!(
        payload,
        pb::AskUserPayload {
            question: "What should I call you?".into(),
            options: vec![],
            selection_mode: SelectionMode::Unspecified as i32,
        }
    );
    let continuation = server
        .resume_text(&run_id(&chunks), "Ada Lovelace")
        .await
        .unwrap();
    expect_answered(&server, &continuation, "Ada Lovelace").await;
}

#[tokio::test]
async fn two_questions_in_one_step_are_answered_one_by_one() {
    let server = TestServer::start().await;
    let chunks = server.stream("ask me two questions").await;
    assert_eq!(finish_reason(&chunks), FinishReason::Suspended);
    let suspended = suspensions(&chunks);
    assert_eq!(suspended.len(), 2);
    let (first, second) = (&suspended[0], &suspended[1]);
    assert_eq!(
        ask_user_payload(first).selection_mode,
        SelectionMode::Unspecified as i32
    );
    assert_eq!(
        ask_user_payload(second).selection_mode,
        SelectionMode::SingleSelect as i32
    );
    let id = run_id(&chunks);
    assert_eq!(server.get_run(&id).await.pending.len(), 2);

    // Without a tool_call_id the answer is ambiguous.
    let ambiguous = server.resume_text(&id, "Ada").await;
    let status = expect_code(ambiguous, tonic::Code::InvalidArgument);
    assert!(
        status.message().contains(&first.tool_call_id),
        "{}",
        status.message()
    );
    let info = status.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.reason, "TOOL_CALL_AMBIGUOUS");
    assert_eq!(
        info.metadata.get("pending").map(String::as_str),
        Some(format!("{}, {}", first.tool_call_id, second.tool_call_id).as_str())
    );
    // An id that is not pending has a reason of its own.
    let answer = pb::resume_request::Answer::Text("Ada".into());
    let status = expect_code(
        server.resume(resume_request(&id, "call_9_9", answer)).await,
        tonic::Code::InvalidArgument,
    );
    let info = status.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.reason, "TOOL_CALL_NOT_PENDING");

    // Answering the second leaves the run suspended on the first.
    let answer = pb::resume_request::Answer::Text("Basic".into());
    let partial = server
        .resume(resume_request(&id, &second.tool_call_id, answer))
        .await
        .unwrap();
    assert_eq!(
        kinds(&partial),
        ["start", "tool_result", "tool_call_suspended", "finish"]
    );
    assert_eq!(finish_reason(&partial), FinishReason::Suspended);
    assert_eq!(suspensions(&partial)[0].tool_call_id, first.tool_call_id);
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), RunStatus::Suspended);
    assert_eq!(run.pending.len(), 1);
    assert_eq!(run.pending[0].tool_call_id, first.tool_call_id);

    // The last answer (no id needed now) lets the model see both.
    let done = server.resume_text(&id, "Ada").await.unwrap();
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    assert_eq!(finish(&done).text, "Thanks! You answered: Basic; Ada.");
}

#[tokio::test]
async fn invalid_ask_user_arguments_are_an_error_result_and_the_run_goes_on() {
    let server = TestServer::start().await;
    let chunks = server.stream("make an invalid call").await;
    let results = tool_results(&chunks);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert_eq!(
        results[0].content,
        "Failed to ask user: selectionMode requires options."
    );
    assert!(suspensions(&chunks).is_empty());
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert!(finish(&chunks).text.contains("selectionMode requires options"));
    let run = server.get_run(&run_id(&chunks)).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert_eq!(run.steps, 2);
}

#[tokio::test]
async fn plain_prompt_answers_without_tools() {
    let server = TestServer::start().await;
    let chunks = server.stream("plain hello").await;
    assert!(!kinds(&chunks).contains(&"tool_call"));
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    let final_text = finish(&chunks).text;
    assert!(final_text.contains("plain hello"), "{final_text}");
    assert_eq!(text(&chunks), final_text);
}

#[tokio::test]
async fn long_text_stream_arrives_whole_and_in_order() {
    let server = TestServer::start().await;
    let chunks = server.stream("stream 5000").await;
    let deltas = kinds(&chunks).iter().filter(|k| **k == "text_delta").count();
    assert_eq!(deltas, 5000);
    assert!(text(&chunks).starts_with("token0 token1 "));
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    let seqs: Vec<u64> = chunks.iter().map(|c| c.seq).collect();
    assert_eq!(seqs, (1..=chunks.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn seq_is_contiguous_from_one_across_stream_and_resumes() {
    let server = TestServer::start().await;
    let first = server.stream("ask me two questions").await;
    let id = run_id(&first);
    let second_call = suspensions(&first)[1].tool_call_id.clone();
    let answer = pb::resume_request::Answer::Text("Pro".into());
    let second = server
        .resume(resume_request(&id, &second_call, answer))
        .await
        .unwrap();
    let third = server.resume_text(&id, "Ada").await.unwrap();

    let seqs: Vec<u64> = first.iter().chain(&second).chain(&third).map(|c| c.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert!(first
        .iter()
        .chain(&second)
        .chain(&third)
        .all(|c| c.run_id == id && c.time.is_some()));
    assert_eq!(server.get_run(&id).await.last_seq, seqs.len() as u64);
}

fn tool_answer(tool_call_id: &str, answer: pb::tool_answer::Answer) -> pb::ToolAnswer {
    pb::ToolAnswer {
        tool_call_id: tool_call_id.into(),
        answer: Some(answer),
    }
}

fn answers(run_id: &str, answers: Vec<pb::ToolAnswer>, request_id: &str) -> pb::ResumeRequest {
    pb::ResumeRequest {
        run_id: run_id.into(),
        answers,
        request_id: request_id.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn two_questions_are_answered_in_one_step_all_or_nothing() {
    use pb::tool_answer::Answer as A;
    let server = TestServer::start().await;
    let chunks = server.stream("ask me two questions").await;
    let suspended = suspensions(&chunks);
    let (first, second) = (&suspended[0].tool_call_id, &suspended[1].tool_call_id);
    let id = run_id(&chunks);
    let before = server.get_run(&id).await;

    // The second answer is not an option: nothing is taken, and the error
    // names it among the answers.
    let refused = server
        .resume(answers(
            &id,
            vec![
                tool_answer(first, A::Text("Ada".into())),
                tool_answer(second, A::Text("Gold".into())),
            ],
            "",
        ))
        .await;
    let status = expect_code(refused, tonic::Code::InvalidArgument);
    let violation = &status
        .get_details_bad_request()
        .expect("BadRequest")
        .field_violations[0];
    assert_eq!(violation.field, "answers[1].text", "{status:?}");
    let info = status.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.metadata.get("tool_call_id"), Some(second));
    assert_eq!(
        server.get_run(&id).await,
        before,
        "a refused Resume changes nothing"
    );

    // A call answered twice, a call without its id, and both ways at once
    // are refused too.
    let twice = vec![
        tool_answer(first, A::Text("Ada".into())),
        tool_answer(first, A::Text("Bo".into())),
    ];
    expect_code(
        server.resume(answers(&id, twice, "")).await,
        tonic::Code::InvalidArgument,
    );
    let unnamed = vec![
        tool_answer("", A::Text("Ada".into())),
        tool_answer(second, A::Text("Basic".into())),
    ];
    expect_code(
        server.resume(answers(&id, unnamed, "")).await,
        tonic::Code::InvalidArgument,
    );
    let mut both = answers(&id, vec![tool_answer(first, A::Text("Ada".into()))], "");
    both.answer = Some(pb::resume_request::Answer::Text("Ada".into()));
    expect_code(server.resume(both).await, tonic::Code::InvalidArgument);
    assert_eq!(server.get_run(&id).await, before);

    // Both fit: one continuation, the model sees both answers.
    let both = vec![
        tool_answer(second, A::Text("Basic".into())),
        tool_answer(first, A::Text("Ada".into())),
    ];
    let done = server.resume(answers(&id, both.clone(), "both-1")).await.unwrap();
    assert_eq!(kinds(&done)[..3], ["start", "tool_result", "tool_result"]);
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    assert_eq!(finish(&done).text, "Thanks! You answered: Basic; Ada.");
    // Retried with its key, it replays; with other answers, it is refused.
    let replay = server.resume(answers(&id, both, "both-1")).await.unwrap();
    let seqs = |chunks: &[pb::AgentChunk]| chunks.iter().map(|c| c.seq).collect::<Vec<_>>();
    assert_eq!(seqs(&replay), seqs(&done));
    let other = vec![
        tool_answer(second, A::Text("Pro".into())),
        tool_answer(first, A::Text("Ada".into())),
    ];
    expect_code(
        server.resume(answers(&id, other, "both-1")).await,
        tonic::Code::FailedPrecondition,
    );
}
