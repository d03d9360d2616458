//! Tool approval end to end: a call that needs approval streams
//! `tool_call_approval` and suspends; approving runs the tool (which may
//! itself suspend), declining gives the model an error result with the
//! reason. Approval comes from the run (`require_tool_approval`, which
//! spares ask_user) or from the agent's tool list (`require_approval`).

use agentd::agent::ToolEntry;
use agentd::pb::{self, FinishReason, RunStatus};
use serde_json::json;

use crate::configured::*;
use crate::helpers::*;

const REVIEW: &str = r#"call human_review {"draft": "Dear customer, your refund is on its way.", "instructions": "Check the tone"}"#;
const BOTH: &str = r#"call ask_user {"question": "Who signs the letter?"} then call human_review {"draft": "Dear customer"}"#;

/// An agent whose human_review calls always wait for approval.
async fn guarded_review_server() -> Configured {
    server_with(vec![agent(
        "reviewer",
        vec!["ask_user".into(), ToolEntry::with_approval("human_review")],
    )])
    .await
}

/// Asserts `chunks` is a suspension on exactly one call awaiting approval,
/// and that GetRun agrees; returns the approval chunk.
async fn expect_approval(server: &Configured, chunks: &[pb::AgentChunk]) -> pb::ToolCallApproval {
    let pending = expect_one_pending(server, chunks, "tool_call_approval").await;
    let approval = approvals(chunks).remove(0);
    assert_eq!(pending.tool_call_id, approval.tool_call_id);
    assert!(pending.awaiting_approval);
    assert_eq!(pending.suspend_payload, None, "the tool has not run yet");
    approval
}

#[tokio::test]
async fn approved_call_runs_the_tool_which_then_suspends() {
    let server = guarded_review_server().await;
    let chunks = server.run("reviewer", REVIEW).await;
    let pending = expect_approval(&server, &chunks).await;
    assert_eq!(pending.tool_name, "human_review");
    assert_eq!(
        agentd::grpc::convert::struct_to_json(pending.args.as_ref().unwrap()),
        json!({"draft": "Dear customer, your refund is on its way.", "instructions": "Check the tone"})
    );
    let id = run_id(&chunks);

    // Approved: the tool runs now, and suspends for the review.
    let approved = server.answer(&id, "", approval(true, "")).await.unwrap();
    assert_eq!(kinds(&approved), ["start", "tool_call_suspended", "finish"]);
    assert_eq!(finish_reason(&approved), FinishReason::Suspended);
    let suspended = suspensions(&approved).remove(0);
    assert_eq!(suspended.tool_call_id, pending.tool_call_id);
    assert_eq!(
        custom_payload(suspended.suspend_payload.as_ref()),
        json!({"draft": "Dear customer, your refund is on its way.", "instructions": "Check the tone"})
    );
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), RunStatus::Suspended);
    assert!(!run.pending[0].awaiting_approval);
    assert_eq!(run.pending[0].suspend_payload, suspended.suspend_payload);

    // A second approval is the wrong kind of answer now.
    server
        .expect_rejected(&id, "", approval(true, ""), "approval")
        .await;

    let done = server
        .answer(&id, "", data(json!({"decision": "approve"})))
        .await
        .unwrap();
    assert_eq!(tool_results(&done)[0].content, "Reviewer approved the draft.");
    assert_eq!(finish_reason(&done), FinishReason::Stop);
    assert_eq!(
        finish(&done).text,
        "The human_review tool returned: Reviewer approved the draft."
    );
    assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Completed);
}

#[tokio::test]
async fn declined_call_gives_the_model_the_reason_and_the_run_completes() {
    let server = guarded_review_server().await;
    let chunks = server.run("reviewer", REVIEW).await;
    expect_approval(&server, &chunks).await;
    let id = run_id(&chunks);

    let declined = server
        .answer(&id, "", approval(false, "the refund is not approved yet"))
        .await
        .unwrap();
    assert_eq!(kinds(&declined[..2]), ["start", "tool_result"]);
    let result = &tool_results(&declined)[0];
    assert!(result.is_error);
    assert_eq!(result.tool_name, "human_review");
    assert_eq!(
        result.content,
        "The user declined this call of human_review: the refund is not approved yet"
    );
    assert!(suspensions(&declined).is_empty(), "a declined tool never runs");
    assert_eq!(finish_reason(&declined), FinishReason::Stop);
    assert_eq!(
        finish(&declined).text,
        "The tool reported an error: The user declined this call of human_review: the refund is not approved yet"
    );
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert_eq!(run.steps, 2);
}

#[tokio::test]
async fn answers_other_than_approval_are_rejected_and_change_nothing() {
    let server = guarded_review_server().await;
    let chunks = server.run("reviewer", REVIEW).await;
    expect_approval(&server, &chunks).await;
    let id = run_id(&chunks);

    let status = server
        .expect_rejected(&id, "", pb::resume_request::Answer::Text("yes".into()), "text")
        .await;
    assert!(
        status.message().contains("waits for approval"),
        "{}",
        status.message()
    );
    server
        .expect_rejected(&id, "", data(json!({"decision": "approve"})), "data")
        .await;

    // The right kind of answer still works afterwards.
    let approved = server.answer(&id, "", approval(true, "")).await.unwrap();
    assert_eq!(finish_reason(&approved), FinishReason::Suspended);
    assert_eq!(suspensions(&approved).len(), 1);
}

#[tokio::test]
async fn run_level_approval_spares_ask_user() {
    let server = server_with(vec![agent(
        "open",
        vec!["ask_user".into(), "human_review".into()],
    )])
    .await;

    // Without the option both tools suspend at once.
    let plain = server.run("open", BOTH).await;
    assert_eq!(suspensions(&plain).len(), 2);
    assert!(approvals(&plain).is_empty());

    // With it, human_review waits for approval; ask_user asks right away.
    let options = pb::RunOptions {
        require_tool_approval: true,
        ..Default::default()
    };
    let chunks = server.run_with("open", BOTH, Some(options)).await;
    assert_eq!(
        kinds(&chunks),
        [
            "start",
            "step_start",
            "tool_call",
            "tool_call",
            "step_finish",
            "tool_call_suspended",
            "tool_call_approval",
            "finish"
        ]
    );
    assert_eq!(suspensions(&chunks)[0].tool_name, "ask_user");
    assert_eq!(approvals(&chunks)[0].tool_name, "human_review");
    let id = run_id(&chunks);

    let declined = server
        .answer(&id, "call_1_2", approval(false, "not today"))
        .await
        .unwrap();
    assert_eq!(
        tool_results(&declined)[0].content,
        "The user declined this call of human_review: not today"
    );
    assert_eq!(
        finish_reason(&declined),
        FinishReason::Suspended,
        "ask_user still waits"
    );
    let done = server
        .answer(&id, "", pb::resume_request::Answer::Text("Ada".into()))
        .await
        .unwrap();
    assert_eq!(
        finish(&done).text,
        "Thanks! You answered: Ada. The tool reported an error: The user declined this call of human_review: not today"
    );
}

#[tokio::test]
async fn per_tool_approval_applies_to_ask_user_too() {
    let server = server_with(vec![agent("careful", vec![ToolEntry::with_approval("ask_user")])]).await;
    let agents = server
        .client()
        .list_agents(pb::ListAgentsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(agents.agents[0].tools[0].require_approval);

    let chunks = server.run("careful", "free").await;
    let approval_chunk = expect_approval(&server, &chunks).await;
    assert_eq!(approval_chunk.tool_name, "ask_user");
    let id = run_id(&chunks);

    let asked = server.answer(&id, "", approval(true, "")).await.unwrap();
    let question = ask_user_payload(&suspensions(&asked)[0]);
    assert_eq!(question.question, "What should I call you?");

    let done = server.resume_text(&id, "Ada").await.unwrap();
    assert_eq!(finish(&done).text, "Thanks! You answered: Ada.");
    assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Completed);
}

#[tokio::test]
async fn a_call_of_a_tool_the_agent_lacks_is_an_error_at_once_not_an_approval() {
    let server = server_with(vec![agent("open", vec!["ask_user".into()])]).await;
    let options = pb::RunOptions {
        require_tool_approval: true,
        ..Default::default()
    };
    let chunks = server
        .run_with(
            "open",
            r#"call send_email {"to": "ana@example.com"}"#,
            Some(options),
        )
        .await;
    assert!(approvals(&chunks).is_empty(), "{:?}", kinds(&chunks));
    let results = tool_results(&chunks);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert_eq!(results[0].content, "Unknown tool: send_email");
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
}
