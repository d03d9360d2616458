//! A custom suspending tool with a resume schema, end to end: human_review
//! suspends with its own payload, Resume `data` is checked against the
//! tool's resume schema before the tool sees it (a violation changes
//! nothing), and two different suspending tools can wait in one step.

use agentd::grpc::convert::struct_to_json;
use agentd::pb::resume_request::Answer;
use agentd::pb::{self, FinishReason, RunStatus};
use serde_json::{json, Value};
use tonic::Code;

use crate::configured::*;
use crate::helpers::*;

const DRAFT: &str = "Dear customer, your refund is on its way.";
const REVIEW: &str = r#"call human_review {"draft": "Dear customer, your refund is on its way.", "instructions": "Check the tone"}"#;
const BOTH: &str = r#"call ask_user {"question": "Who signs the letter?"} then call human_review {"draft": "Dear customer"}"#;

async fn review_server() -> Configured {
    server_with(vec![agent(
        "writer",
        vec!["ask_user".into(), "human_review".into()],
    )])
    .await
}

/// Starts a review and checks it suspended with the exact payload.
async fn start_review(server: &Configured) -> String {
    let chunks = server.run("writer", REVIEW).await;
    let suspended = expect_one_suspension(server, &chunks).await;
    assert_eq!(suspended.tool_name, "human_review");
    assert_eq!(
        custom_payload(suspended.suspend_payload.as_ref()),
        json!({"draft": DRAFT, "instructions": "Check the tone"})
    );
    run_id(&chunks)
}

/// Resumes with good review data and checks the result and the completed run.
async fn expect_result(server: &Configured, id: &str, review: Value, result: &str) {
    let done = server.answer(id, "", data(review)).await.unwrap();
    assert_eq!(kinds(&done[..2]), ["start", "tool_result"]);
    let tool_result = &tool_results(&done)[0];
    assert_eq!(tool_result.content, result);
    assert!(!tool_result.is_error);
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    let run = server.get_run(id).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert!(
        run.final_text.contains(result.lines().next().unwrap()),
        "{}",
        run.final_text
    );
}

#[tokio::test]
async fn approved_review_completes_the_run() {
    let server = review_server().await;
    let id = start_review(&server).await;
    expect_result(
        &server,
        &id,
        json!({"decision": "approve"}),
        "Reviewer approved the draft.",
    )
    .await;
    let run = server.get_run(&id).await;
    assert_eq!(
        run.final_text,
        "The human_review tool returned: Reviewer approved the draft."
    );
}

#[tokio::test]
async fn rejected_and_edited_reviews_say_why() {
    let server = review_server().await;
    let id = start_review(&server).await;
    expect_result(
        &server,
        &id,
        json!({"decision": "reject", "comment": "Too curt"}),
        "Reviewer rejected the draft: Too curt",
    )
    .await;

    let id = start_review(&server).await;
    expect_result(
        &server,
        &id,
        json!({"decision": "edit", "revised_text": "Dear Ada, your refund is on its way.", "comment": "Use her name"}),
        "Reviewer edited the draft: Dear Ada, your refund is on its way.\nComment: Use her name",
    )
    .await;
}

#[tokio::test]
async fn data_that_breaks_the_resume_schema_is_rejected_and_changes_nothing() {
    let server = review_server().await;
    let id = start_review(&server).await;

    let cases = [
        (json!({"comment": "fine"}), "\"decision\" is a required property"),
        (
            json!({"decision": "edit"}),
            "\"revised_text\" is a required property",
        ),
        (json!({"decision": "maybe"}), "data/decision"),
        (json!({"decision": "approve", "comment": 42}), "data/comment"),
        (json!({"decision": "approve", "revisedText": "x"}), "revisedText"),
        (json!("approve"), "is not of type \"object\""),
    ];
    for (review, expected) in cases {
        let status = server
            .expect_rejected(&id, "", data(review.clone()), "data")
            .await;
        assert!(
            status.message().contains(expected),
            "{review}: {} should mention {expected}",
            status.message()
        );
        assert!(
            status.message().contains("resume schema of human_review"),
            "{}",
            status.message()
        );
    }
    // The wrong kind of answer names `data` too.
    server
        .expect_rejected(&id, "", Answer::Text("looks good".into()), "data")
        .await;

    expect_result(
        &server,
        &id,
        json!({"decision": "approve"}),
        "Reviewer approved the draft.",
    )
    .await;
}

#[tokio::test]
async fn two_suspending_tools_in_one_step_are_answered_in_either_order() {
    let server = review_server().await;
    let expected = "Thanks! You answered: Ada. The human_review tool returned: Reviewer approved the draft.";
    for review_first in [false, true] {
        let chunks = server.run("writer", BOTH).await;
        let suspended = suspensions(&chunks);
        let names: Vec<&str> = suspended.iter().map(|s| s.tool_name.as_str()).collect();
        assert_eq!(names, ["ask_user", "human_review"]);
        assert_eq!(ask_user_payload(&suspended[0]).question, "Who signs the letter?");
        assert_eq!(
            custom_payload(suspended[1].suspend_payload.as_ref()),
            json!({"draft": "Dear customer"})
        );
        let id = run_id(&chunks);
        let (ask, review) = (
            suspended[0].tool_call_id.as_str(),
            suspended[1].tool_call_id.as_str(),
        );

        // Without a tool_call_id the answer is ambiguous; each call checks
        // its answer by its own rules.
        expect_code(
            server.answer(&id, "", data(json!({"decision": "approve"}))).await,
            Code::InvalidArgument,
        );
        server
            .expect_rejected(&id, review, Answer::Text("Ada".into()), "data")
            .await;
        server
            .expect_rejected(&id, ask, data(json!({"decision": "approve"})), "data")
            .await;

        let (first, second): ((&str, Answer), (&str, Answer)) = if review_first {
            (
                (review, data(json!({"decision": "approve"}))),
                (ask, Answer::Text("Ada".into())),
            )
        } else {
            (
                (ask, Answer::Text("Ada".into())),
                (review, data(json!({"decision": "approve"}))),
            )
        };
        let middle = server.answer(&id, first.0, first.1).await.unwrap();
        assert_eq!(finish_reason(&middle), FinishReason::Suspended);
        let still = suspensions(&middle);
        assert_eq!(still.len(), 1);
        assert_eq!(still[0].tool_call_id, second.0);

        let done = server.answer(&id, "", second.1).await.unwrap();
        assert_eq!(finish_reason(&done), FinishReason::Stop);
        assert_eq!(finish(&done).text, expected, "review first: {review_first}");
        assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Completed);
    }
}

#[tokio::test]
async fn list_agents_shows_human_review_with_its_resume_schema() {
    let server = server_with(vec![agent(
        "writer",
        vec![
            "ask_user".into(),
            agentd::agent::ToolEntry::with_approval("human_review"),
        ],
    )])
    .await;
    let response = server
        .client()
        .list_agents(pb::ListAgentsRequest {})
        .await
        .unwrap()
        .into_inner();
    let tools = &response.agents[0].tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["ask_user", "human_review"]);
    assert!(!tools[0].require_approval);
    assert_eq!(tools[0].resume_schema, None);

    let review = &tools[1];
    assert_eq!(review.source, "builtin");
    assert!(review.require_approval);
    assert!(review.description.starts_with("Ask a person to review a draft"));
    let input = struct_to_json(review.input_schema.as_ref().unwrap());
    assert_eq!(input["required"], json!(["draft"]));
    let resume = struct_to_json(review.resume_schema.as_ref().expect("a resume schema"));
    assert_eq!(resume["required"], json!(["decision"]));
    assert_eq!(
        resume["properties"]["decision"]["enum"],
        json!(["approve", "reject", "edit"])
    );
    assert_eq!(resume["then"], json!({"required": ["revised_text"]}));
}

#[tokio::test]
async fn execute_tool_gives_human_review_fallback_text() {
    let server = review_server().await;
    let execute = |args: Value| {
        let mut client = server.client();
        async move {
            client
                .execute_tool(pb::ExecuteToolRequest {
                    tool_name: "human_review".into(),
                    args: Some(agentd::grpc::convert::json_to_struct(&args)),
                    agent_id: "writer".into(),
                })
                .await
                .map(|r| r.into_inner())
        }
    };
    let response = execute(json!({"draft": DRAFT, "instructions": "Check the tone"}))
        .await
        .unwrap();
    assert_eq!(
        response,
        pb::ExecuteToolResponse {
            content: format!("[Review requested]: {DRAFT}\nInstructions: Check the tone"),
            is_error: false,
        }
    );
    let missing = execute(json!({"instructions": "x"})).await.unwrap();
    assert!(missing.is_error);
    assert!(missing.content.contains("draft"), "{}", missing.content);
}

#[tokio::test]
async fn the_default_assistant_has_no_human_review() {
    let server = TestServer::start().await;
    let status = server
        .client()
        .execute_tool(pb::ExecuteToolRequest {
            tool_name: "human_review".into(),
            args: Some(agentd::grpc::convert::json_to_struct(&json!({"draft": "x"}))),
            agent_id: String::new(),
        })
        .await;
    expect_code(status, Code::NotFound);
}
