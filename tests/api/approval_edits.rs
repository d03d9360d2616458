//! Approve with edits (`Approval.edited_args`): the tool runs the edited
//! arguments, checked against its input schema first; the stream, the
//! history, GetRun and the thread show the model's arguments and the
//! edited ones, and the model's conversation has the call as it ran. Bad
//! edits are INVALID_ARGUMENT and change nothing.

use agentd::agent::ToolEntry;
use agentd::grpc::convert::{json_to_struct, struct_to_json};
use agentd::pb::agent_chunk::Chunk;
use agentd::pb::resume_request::Answer;
use agentd::pb::{self, FinishReason, RunStatus};
use serde_json::{json, Value};

use crate::configured::*;
use crate::helpers::*;

const REVIEW: &str = r#"call human_review {"draft": "Dear customer, your refund is on its way.", "instructions": "Check the tone"}"#;

fn model_args() -> Value {
    json!({"draft": "Dear customer, your refund is on its way.", "instructions": "Check the tone"})
}

fn edited_args() -> Value {
    json!({"draft": "Dear Ms Lovelace, your refund of 40 EUR is on its way."})
}

fn approve_with(args: Value) -> Answer {
    Answer::Approval(pb::Approval {
        approved: true,
        reason: String::new(),
        edited_args: Some(json_to_struct(&args)),
        ..Default::default()
    })
}

async fn guarded_review_server() -> Configured {
    server_with(vec![agent(
        "reviewer",
        vec!["ask_user".into(), ToolEntry::with_approval("human_review")],
    )])
    .await
}

fn json_of(args: &Option<prost_types::Struct>) -> Value {
    struct_to_json(args.as_ref().expect("arguments"))
}

/// The `tool_call` chunks of a stream.
fn tool_calls(chunks: &[pb::AgentChunk]) -> Vec<pb::ToolCall> {
    chunks
        .iter()
        .filter_map(|chunk| match &chunk.chunk {
            Some(Chunk::ToolCall(call)) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_tool_runs_the_edited_arguments_and_both_are_on_record() {
    let server = guarded_review_server().await;
    let chunks = server
        .start_run(pb::StreamAgentRequest {
            agent_id: "reviewer".into(),
            prompt: REVIEW.into(),
            thread_id: "letters:7".into(),
            ..Default::default()
        })
        .await
        .expect("StreamAgent");
    let id = run_id(&chunks);
    assert_eq!(approvals(&chunks).len(), 1);

    let approved = server.answer(&id, "", approve_with(edited_args())).await.unwrap();
    assert_eq!(
        kinds(&approved),
        ["start", "tool_call", "tool_call_suspended", "finish"]
    );
    // The continuation reports the call as it runs, with the model's
    // arguments beside the edited ones.
    let reported = tool_calls(&approved).remove(0);
    assert_eq!(reported.tool_name, "human_review");
    assert_eq!(json_of(&reported.args), edited_args());
    assert_eq!(json_of(&reported.original_args), model_args());
    // The tool ran the edited arguments: its review shows the edited draft.
    let review = suspensions(&approved).remove(0);
    assert_eq!(
        custom_payload(review.suspend_payload.as_ref()),
        json!({"draft": "Dear Ms Lovelace, your refund of 40 EUR is on its way."})
    );

    // GetRun lists the edited call.
    let run = server.get_run(&id).await;
    assert_eq!(run.edited_calls.len(), 1);
    assert_eq!(run.edited_calls[0].tool_call_id, reported.tool_call_id);
    assert_eq!(json_of(&run.edited_calls[0].args), edited_args());
    assert_eq!(json_of(&run.edited_calls[0].original_args), model_args());

    // The history has both: the call as the model made it, then as it ran.
    let history = server
        .client()
        .subscribe_run(pb::SubscribeRunRequest {
            run_id: id.clone(),
            after_seq: 0,
        })
        .await
        .unwrap()
        .into_inner();
    let history = collect(history).await.unwrap();
    let calls = tool_calls(&history);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(json_of(&calls[0].args), model_args());
    assert_eq!(calls[0].original_args, None);
    assert_eq!(calls[1], reported);

    let done = server
        .answer(&id, "", data(json!({"decision": "approve"})))
        .await
        .unwrap();
    assert_eq!(finish_reason(&done), FinishReason::Stop);

    // The model's conversation has the call with the arguments it ran
    // with; the thread shows the model's too.
    let thread = server
        .client()
        .get_thread(pb::GetThreadRequest {
            thread_id: "letters:7".into(),
        })
        .await
        .unwrap()
        .into_inner();
    let made = thread
        .messages
        .iter()
        .flat_map(|message| &message.tool_calls)
        .find(|call| call.tool_name == "human_review")
        .expect("the model's call");
    assert_eq!(json_of(&made.args), edited_args());
    assert_eq!(json_of(&made.original_args), model_args());
    assert_eq!(status_of(&server.get_run(&id).await), RunStatus::Completed);
}

#[tokio::test]
async fn edits_that_break_the_input_schema_are_refused_and_change_nothing() {
    let server = guarded_review_server().await;
    let chunks = server.run("reviewer", REVIEW).await;
    let id = run_id(&chunks);

    let status = server
        .expect_rejected(&id, "", approve_with(json!({"draft": 5})), "approval.edited_args")
        .await;
    assert!(
        status.message().contains("approval.edited_args/draft"),
        "{}",
        status.message()
    );
    let status = server
        .expect_rejected(&id, "", approve_with(json!({})), "approval.edited_args")
        .await;
    assert!(status.message().contains("draft"), "{}", status.message());
    let status = server
        .expect_rejected(
            &id,
            "",
            approve_with(json!({"draft": "Hi", "instructions": 3})),
            "approval.edited_args",
        )
        .await;
    assert!(
        status.message().contains("approval.edited_args/instructions"),
        "{}",
        status.message()
    );

    // Edited arguments with a decline: a declined call does not run.
    let declined_with_edits = Answer::Approval(pb::Approval {
        approved: false,
        reason: "no".into(),
        edited_args: Some(json_to_struct(&edited_args())),
        ..Default::default()
    });
    server
        .expect_rejected(&id, "", declined_with_edits, "approval.edited_args")
        .await;
    let run = server.get_run(&id).await;
    assert!(run.pending[0].awaiting_approval);
    assert!(run.edited_calls.is_empty());

    // The call still waits, and a plain approval runs the model's arguments.
    let approved = server.answer(&id, "", approval(true, "")).await.unwrap();
    assert_eq!(kinds(&approved), ["start", "tool_call_suspended", "finish"]);
    assert_eq!(
        custom_payload(suspensions(&approved)[0].suspend_payload.as_ref()),
        model_args()
    );
    assert!(server.get_run(&id).await.edited_calls.is_empty());
}

#[tokio::test]
async fn edited_arguments_answer_only_a_call_awaiting_approval() {
    let server = guarded_review_server().await;
    let chunks = server.run("reviewer", "free").await;
    let id = run_id(&chunks);
    server
        .expect_rejected(&id, "", approve_with(json!({"question": "Hi?"})), "approval")
        .await;
}
