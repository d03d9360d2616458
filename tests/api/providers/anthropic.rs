//! Anthropic Messages: the streamed event sequence (text and tool_use
//! blocks, input_json_delta, message_delta usage), tool results sent back
//! as one user message of tool_result blocks, parallel calls answered in
//! separate Resumes, and input cut off by max_tokens.

use agentd::model::ProviderKind;
use agentd::pb::{self, resume_request::Answer};
use serde_json::{json, Value};

use super::*;

const ASK: &str = include_str!("transcripts/anthropic_ask_user.sse");
const ANSWER: &str = include_str!("transcripts/anthropic_answer.sse");
const PARALLEL: &str = include_str!("transcripts/anthropic_parallel.sse");
const INVALID_JSON: &str = include_str!("transcripts/anthropic_invalid_json.sse");
const RETRY: &str = include_str!("transcripts/anthropic_retry.sse");

/// The request body of a step after `messages`.
fn request(messages: Value) -> Value {
    json!({
        "model": MODEL,
        "max_tokens": 4096,
        "stream": true,
        "system": INSTRUCTIONS,
        "tools": [{
            "name": "ask_user",
            "description": ask_user_description(),
            "input_schema": ask_user_schema(),
        }],
        "messages": messages,
    })
}

fn user(prompt: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": prompt}]})
}

fn tool_use(id: &str, input: &Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": "ask_user", "input": input})
}

fn tool_result(id: &str, content: &str, is_error: bool) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error})
}

fn plan_question() -> Value {
    json!({"question": "Which plan do you want?", "options": [{"label": "Basic"}, {"label": "Pro"}]})
}

#[tokio::test]
async fn ask_user_cycle_end_to_end() {
    let prompt = "Set me up with a plan";
    let (server, chunks) = replay(ProviderKind::Anthropic, &[ASK, ANSWER], prompt).await;
    assert_eq!(
        kinds(&chunks),
        [
            "start",
            "step_start",
            "text_delta",
            "text_delta",
            "tool_call",
            "step_finish",
            "tool_call_suspended",
            "finish"
        ]
    );
    assert_eq!(text(&chunks), "Let me check with you first.");
    let call_id = "toolu_01T1x1fJ34qAmk2tNTrN7Up6";
    assert_eq!(
        tool_calls(&chunks),
        ask_user_calls(&[(call_id, &plan_question())])
    );
    assert_eq!(step_usage(&chunks), [(472, 89)]);

    let first = &server.provider.requests()[0];
    assert_eq!(first.path, "/v1/messages");
    let header = |name: &str| first.headers.get(name).map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(header("x-api-key"), api_key());
    assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(first.body, request(json!([user(prompt)])));

    let id = run_id(&chunks);
    let resumed = server.resume_text(&id, "Pro").await.expect("Resume");
    assert_eq!(
        kinds(&resumed),
        [
            "start",
            "tool_result",
            "step_start",
            "text_delta",
            "text_delta",
            "step_finish",
            "finish"
        ]
    );
    assert_eq!(finish(&resumed).text, "Great choice: Pro ✓");
    assert_eq!(step_usage(&resumed), [(580, 7)]);
    assert_eq!(finish_usage(&resumed), (472 + 580, 89 + 7));
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), pb::RunStatus::Completed);
    assert_eq!(run_usage(&run), (1052, 96));

    let messages = json!([
        user(prompt),
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me check with you first."},
            tool_use(call_id, &plan_question()),
        ]},
        {"role": "user", "content": [tool_result(call_id, "User answered: Pro", false)]},
    ]);
    assert_eq!(server.provider.bodies()[1], request(messages));
}

#[tokio::test]
async fn parallel_calls_answered_in_separate_resumes_share_one_user_message() {
    let prompt = "Introduce yourself and pick a plan";
    let (server, chunks) = replay(ProviderKind::Anthropic, &[PARALLEL, ANSWER], prompt).await;
    let name_question = json!({"question": "What should I call you?"});
    let plan_question = json!({"question": "Which plan?", "options": [{"label": "Basic"}, {"label": "Pro"}]});
    assert_eq!(
        tool_calls(&chunks),
        ask_user_calls(&[
            ("toolu_01NameAsk", &name_question),
            ("toolu_01PlanAsk", &plan_question)
        ])
    );
    let id = run_id(&chunks);
    let partial = server
        .resume(resume_request(&id, "toolu_01NameAsk", Answer::Text("Ada".into())))
        .await
        .expect("first Resume");
    assert_eq!(finish_reason(&partial), pb::FinishReason::Suspended);
    assert_eq!(server.provider.requests().len(), 1);
    let resumed = server
        .resume(resume_request(
            &id,
            "toolu_01PlanAsk",
            Answer::Text("Basic".into()),
        ))
        .await
        .expect("second Resume");
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);

    let messages = json!([
        user(prompt),
        {"role": "assistant", "content": [
            tool_use("toolu_01NameAsk", &name_question),
            tool_use("toolu_01PlanAsk", &plan_question),
        ]},
        {"role": "user", "content": [
            tool_result("toolu_01NameAsk", "User answered: Ada", false),
            tool_result("toolu_01PlanAsk", "User answered: Basic", false),
        ]},
    ]);
    assert_eq!(server.provider.bodies()[1], request(messages));
}

#[tokio::test]
async fn input_cut_off_by_max_tokens_is_an_error_result_and_the_run_goes_on() {
    let prompt = "Pick a plan for me";
    let (server, chunks) = replay(ProviderKind::Anthropic, &[INVALID_JSON, RETRY], prompt).await;
    assert_eq!(
        kinds(&chunks),
        [
            "start",
            "step_start",
            "tool_call",
            "tool_result",
            "step_finish",
            "step_start",
            "tool_call",
            "step_finish",
            "tool_call_suspended",
            "finish"
        ]
    );
    let cut_off = r#"{"question": "Which plan do y"#;
    let plan_question = json!({"question": "Which plan?", "options": [{"label": "Basic"}, {"label": "Pro"}]});
    assert_eq!(
        tool_calls(&chunks),
        ask_user_calls(&[
            ("toolu_01CutOff", &json!({"value": cut_off})),
            ("toolu_01Again", &plan_question)
        ]),
        "the cut-off arguments are shown raw"
    );
    assert_eq!(step_usage(&chunks), [(470, 16), (530, 40)]);
    let results = tool_results(&chunks);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .content
            .starts_with("Invalid JSON in arguments for ask_user: EOF while parsing"),
        "{}",
        results[0].content
    );
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Suspended);
    let run = server.get_run(&run_id(&chunks)).await;
    assert_eq!(status_of(&run), pb::RunStatus::Suspended);
    assert_eq!(run_usage(&run), (470 + 530, 16 + 40));

    let messages = json!([
        user(prompt),
        {"role": "assistant", "content": [tool_use("toolu_01CutOff", &json!({}))]},
        {"role": "user", "content": [tool_result("toolu_01CutOff", &results[0].content, true)]},
    ]);
    assert_eq!(server.provider.bodies()[1], request(messages));
}
