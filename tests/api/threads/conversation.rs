//! A three-run conversation with the scripted model: the third run's model
//! sees the earlier runs' messages and answers (its `recap` says so), and
//! GetThread returns every message with its run.

use agentd::pb;

use super::{get_thread, on_thread, stream, transcript};
use crate::helpers::{finish_reason, run_id, text, TestServer};

#[tokio::test]
async fn a_three_run_conversation_carries_its_history() {
    let server = TestServer::start().await;
    let thread = "support:conversation-1";

    let first = stream(&server, on_thread(thread, "Help me pick a plan"))
        .await
        .expect("first run");
    assert_eq!(finish_reason(&first), pb::FinishReason::Suspended);
    let first_id = run_id(&first);
    let answered = server.resume_text(&first_id, "Pro").await.expect("Resume");
    assert_eq!(text(&answered), "Thanks! You answered: Pro.");

    let second = stream(&server, on_thread(thread, "And a free question"))
        .await
        .expect("second run");
    let second_id = run_id(&second);
    assert_ne!(second_id, first_id);
    server.resume_text(&second_id, "Ada").await.expect("Resume");

    let third = stream(&server, on_thread(thread, "recap please"))
        .await
        .expect("third run");
    assert_eq!(finish_reason(&third), pb::FinishReason::Stop);
    assert_eq!(
        text(&third),
        "Recap: 9 messages, the first from the user. Earlier messages: \"Help me pick a plan\"; \
         \"And a free question\". Answers: Pro; Ada."
    );
    let third_id = run_id(&third);

    // Each run keeps its thread.
    for id in [&first_id, &second_id, &third_id] {
        assert_eq!(server.get_run(id).await.thread_id, thread);
    }
    // A run without a thread sees nothing of it.
    let alone = server.stream("recap").await;
    assert_eq!(
        text(&alone),
        "Recap: 1 message, the first from the user. Earlier messages: none. Answers: none."
    );
    assert_eq!(server.get_run(&run_id(&alone)).await.thread_id, "");

    let read = get_thread(&server, thread).await.expect("GetThread");
    assert_eq!(read.thread_id, thread);
    assert_eq!(
        read.run_ids,
        [first_id.clone(), second_id.clone(), third_id.clone()]
    );
    assert_eq!(read.latest_run_id, third_id);
    assert_eq!(read.latest_run_status, pb::RunStatus::Completed as i32);
    assert_eq!(
        transcript(&read),
        [
            "user: Help me pick a plan",
            "assistant -> ask_user",
            "tool: User answered: Pro",
            "assistant: Thanks! You answered: Pro.",
            "user: And a free question",
            "assistant -> ask_user",
            "tool: User answered: Ada",
            "assistant: Thanks! You answered: Ada.",
            "user: recap please",
            "assistant: Recap: 9 messages, the first from the user. Earlier messages: \
             \"Help me pick a plan\"; \"And a free question\". Answers: Pro; Ada.",
        ]
    );
    let runs: Vec<&str> = read.messages.iter().map(|m| m.run_id.as_str()).collect();
    assert_eq!(runs[..4], [first_id.as_str(); 4]);
    assert_eq!(runs[4..8], [second_id.as_str(); 4]);
    assert_eq!(runs[8..], [third_id.as_str(); 2]);
    // Answers given by Resume say so.
    let answer = read.messages[2].answer.as_ref().expect("the answer");
    assert_eq!(answer.text, "Pro");
    assert_eq!(answer.source, pb::AnswerSource::Resume as i32);
    assert_eq!(answer.answered_by, "default");
    assert!(answer.answered_at.is_some());
    assert!(read.messages[1].answer.is_none());
}

#[tokio::test]
async fn thread_ids_are_checked() {
    let server = TestServer::start().await;
    for bad in ["a b", "x/y", &"t".repeat(129), "é"] {
        let status = stream(&server, on_thread(bad, "plain hi")).await.expect_err(bad);
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{bad}");
        let bad_request = tonic_types::StatusExt::get_details_bad_request(&status).expect("BadRequest");
        assert_eq!(bad_request.field_violations[0].field, "thread_id");
    }
    let status = get_thread(&server, "").await.expect_err("empty");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    // auto_resume needs a thread.
    let request = pb::StreamAgentRequest {
        prompt: "plain hi".into(),
        auto_resume: true,
        ..Default::default()
    };
    let status = stream(&server, request).await.expect_err("auto_resume alone");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
}
