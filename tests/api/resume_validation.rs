//! Bad input gets a precise status and loses nothing: a rejected Resume
//! leaves the run exactly as it was, and a correct answer still completes it.

use agentd::pb::resume_request::Answer;
use agentd::pb::{self, FinishReason, RunStatus};
use tonic::Code;
use tonic_types::StatusExt;

use crate::helpers::*;

fn labels(labels: &[&str]) -> Answer {
    Answer::Selections(pb::Selections {
        labels: labels.iter().map(|l| l.to_string()).collect(),
    })
}

/// Sends a Resume that must be rejected with INVALID_ARGUMENT naming
/// `field`, and checks the run did not change at all.
async fn expect_rejected(
    server: &TestServer,
    run_id: &str,
    answer: Option<Answer>,
    field: &str,
) -> tonic::Status {
    let before = server.get_run(run_id).await;
    let request = pb::ResumeRequest {
        run_id: run_id.into(),
        answer,
        ..Default::default()
    };
    let status = expect_code(server.resume(request).await, Code::InvalidArgument);
    let bad_request = status.get_details_bad_request().expect("BadRequest details");
    assert_eq!(bad_request.field_violations[0].field, field, "{status:?}");
    assert_eq!(
        server.get_run(run_id).await,
        before,
        "a rejected Resume changes nothing"
    );
    status
}

#[tokio::test]
async fn wrong_answers_to_a_multi_select_question_change_nothing() {
    let server = TestServer::start().await;
    let id = run_id(&server.stream("multi").await);

    let status = expect_rejected(&server, &id, Some(Answer::Text("Olives".into())), "text").await;
    let info = status.get_details_error_info().expect("ErrorInfo details");
    assert_eq!(info.reason, "INVALID_ANSWER");
    assert_eq!(info.metadata["valid_labels"], "Mushrooms, Olives, Peppers, Basil");
    assert!(
        status.message().contains("Mushrooms, Olives, Peppers, Basil"),
        "{}",
        status.message()
    );

    let status = expect_rejected(
        &server,
        &id,
        Some(labels(&["Olives", "Anchovies"])),
        "selections.labels",
    )
    .await;
    assert!(status
        .message()
        .contains("\"Anchovies\" is not one of the options"));
    expect_rejected(
        &server,
        &id,
        Some(labels(&["Olives", "Olives"])),
        "selections.labels",
    )
    .await;
    expect_rejected(&server, &id, Some(labels(&[])), "selections.labels").await;
    expect_rejected(&server, &id, None, "answer").await;
    let approval = Answer::Approval(pb::Approval {
        approved: true,
        reason: String::new(),
        edited_args: None,
        ..Default::default()
    });
    expect_rejected(&server, &id, Some(approval), "approval").await;

    let done = server.resume_labels(&id, &["Peppers"]).await.unwrap();
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    assert_eq!(tool_results(&done)[0].content, "User answered: Peppers");
}

#[tokio::test]
async fn wrong_answers_to_free_text_and_single_select_change_nothing() {
    let server = TestServer::start().await;
    let free = run_id(&server.stream("free").await);
    expect_rejected(&server, &free, Some(labels(&["Ada"])), "selections").await;
    expect_rejected(&server, &free, Some(Answer::Text(String::new())), "text").await;
    expect_rejected(&server, &free, Some(Answer::Text("   ".into())), "text").await;
    let data = Answer::Data(prost_types::Value {
        kind: Some(prost_types::value::Kind::BoolValue(true)),
    });
    expect_rejected(&server, &free, Some(data), "data").await;
    assert_eq!(
        finish_reason(&server.resume_text(&free, "Ada").await.unwrap()),
        FinishReason::Stop
    );

    let single = run_id(&server.stream("pick a plan").await);
    let status = expect_rejected(&server, &single, Some(Answer::Text("Gold".into())), "text").await;
    let info = status.get_details_error_info().expect("ErrorInfo details");
    assert_eq!(info.metadata["valid_labels"], "Basic, Pro, Enterprise");
    expect_rejected(&server, &single, Some(Answer::Text("pro".into())), "text").await;
    expect_rejected(&server, &single, Some(labels(&["Pro"])), "selections").await;
    assert_eq!(
        finish_reason(&server.resume_text(&single, "Enterprise").await.unwrap()),
        FinishReason::Stop
    );
}

#[tokio::test]
async fn unknown_and_malformed_runs() {
    let server = TestServer::start().await;
    let unknown = uuid::Uuid::now_v7().to_string();
    let status = expect_code(server.resume_text(&unknown, "Pro").await, Code::NotFound);
    assert_eq!(status.message(), "run not found");
    let get = server
        .client()
        .get_run(pb::GetRunRequest { run_id: unknown })
        .await;
    expect_code(get, Code::NotFound);

    let status = expect_code(
        server.resume_text("not-a-run", "Pro").await,
        Code::InvalidArgument,
    );
    assert_eq!(
        status.get_details_bad_request().unwrap().field_violations[0].field,
        "run_id"
    );
    expect_code(server.resume_text("", "Pro").await, Code::InvalidArgument);
}

#[tokio::test]
async fn resuming_a_completed_run_names_its_status() {
    let server = TestServer::start().await;
    let id = run_id(&server.stream("pick a plan").await);
    server.resume_text(&id, "Pro").await.unwrap();
    let status = expect_code(server.resume_text(&id, "Pro").await, Code::FailedPrecondition);
    assert!(status.message().contains("completed"), "{}", status.message());
    let info = status.get_details_error_info().unwrap();
    assert_eq!(info.metadata["status"], "completed");
}

#[tokio::test]
async fn a_tool_call_id_that_is_not_pending_is_invalid() {
    let server = TestServer::start().await;
    let chunks = server.stream("pick a plan").await;
    let id = run_id(&chunks);
    let request = resume_request(&id, "call_9_9", Answer::Text("Pro".into()));
    let status = expect_code(server.resume(request).await, Code::InvalidArgument);
    assert!(status.message().contains("call_9_9"));
    assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Suspended);

    let pending = suspensions(&chunks)[0].tool_call_id.clone();
    let request = resume_request(&id, &pending, Answer::Text("Pro".into()));
    assert_eq!(
        finish_reason(&server.resume(request).await.unwrap()),
        FinishReason::Stop
    );
}

#[tokio::test]
async fn sixteen_racing_resumes_let_exactly_one_through() {
    let server = TestServer::start().await;
    let id = run_id(&server.stream("pick a plan").await);
    let racers = (0..16).map(|i| {
        let mut client = server.client();
        let id = id.clone();
        let answer = ["Basic", "Pro", "Enterprise"][i % 3].to_owned();
        tokio::spawn(async move {
            let request = resume_request(&id, "", Answer::Text(answer.clone()));
            let stream = client.resume(request).await?.into_inner();
            collect(stream).await.map(|chunks| (answer, chunks))
        })
    });
    let mut winners = Vec::new();
    for racer in racers.collect::<Vec<_>>() {
        match racer.await.unwrap() {
            Ok(win) => winners.push(win),
            Err(status) => {
                assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
            }
        }
    }
    assert_eq!(winners.len(), 1, "exactly one Resume proceeds");
    let (answer, chunks) = &winners[0];
    assert_eq!(finish_reason(chunks), FinishReason::Stop);
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert_eq!(run.final_text, format!("Thanks! You answered: {answer}."));
    assert_eq!(run.last_seq, chunks.last().unwrap().seq);
}

#[tokio::test]
async fn malformed_start_requests_are_invalid_arguments() {
    let server = TestServer::start().await;
    let user = |content: &str| pb::Message {
        role: pb::Role::User as i32,
        content: content.into(),
    };
    let cases = [
        (pb::StreamAgentRequest::default(), "prompt"),
        (
            pb::StreamAgentRequest {
                prompt: "hi".into(),
                messages: vec![user("hi")],
                ..Default::default()
            },
            "prompt",
        ),
        (
            pb::StreamAgentRequest {
                messages: vec![pb::Message {
                    role: 0,
                    content: "hi".into(),
                }],
                ..Default::default()
            },
            "messages",
        ),
        (
            pb::StreamAgentRequest {
                messages: vec![user("")],
                ..Default::default()
            },
            "messages",
        ),
    ];
    for (request, field) in cases {
        let status = expect_code(server.start_run(request).await, Code::InvalidArgument);
        assert_eq!(
            status.get_details_bad_request().unwrap().field_violations[0].field,
            field
        );
    }
    let unknown = pb::StreamAgentRequest {
        agent_id: "nobody".into(),
        prompt: "hi".into(),
        ..Default::default()
    };
    let status = expect_code(server.start_run(unknown).await, Code::NotFound);
    assert!(status.message().contains("nobody"));
}

#[tokio::test]
async fn messages_start_a_run_like_a_prompt() {
    let server = TestServer::start().await;
    let request = pb::StreamAgentRequest {
        messages: vec![
            pb::Message {
                role: pb::Role::System as i32,
                content: "Be brief.".into(),
            },
            pb::Message {
                role: pb::Role::User as i32,
                content: "multi".into(),
            },
        ],
        ..Default::default()
    };
    let chunks = server.start_run(request).await.unwrap();
    let question = ask_user_payload(&suspensions(&chunks)[0]);
    assert_eq!(question.selection_mode, pb::SelectionMode::MultiSelect as i32);
}

#[tokio::test]
async fn max_steps_stops_the_run() {
    let server = TestServer::start().await;
    let request = pb::StreamAgentRequest {
        prompt: "invalid".into(),
        options: Some(pb::RunOptions {
            max_steps: 1,
            ..Default::default()
        }),
        ..Default::default()
    };
    let chunks = server.start_run(request).await.unwrap();
    assert_eq!(finish_reason(&chunks), FinishReason::MaxSteps);
    let run = server.get_run(&run_id(&chunks)).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert_eq!(run.steps, 1);
}
