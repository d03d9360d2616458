//! OpenAI-compatible Chat Completions: tool-call argument deltas, parallel
//! calls answered in separate Resumes, the usage chunk and `[DONE]`, and
//! invalid argument JSON, with the exact request bodies after each Resume.

use agentd::model::ProviderKind;
use agentd::pb::{self, resume_request::Answer};
use serde_json::{json, Value};

use super::*;

const ASK: &str = include_str!("transcripts/openai_ask_user.sse");
const ANSWER: &str = include_str!("transcripts/openai_answer.sse");
const PARALLEL: &str = include_str!("transcripts/openai_parallel.sse");
const INVALID_JSON: &str = include_str!("transcripts/openai_invalid_json.sse");
const RETRY: &str = include_str!("transcripts/openai_retry.sse");

fn tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": "ask_user",
            "description": ask_user_description(),
            "parameters": ask_user_schema(),
        },
    }])
}

/// The request body of a step after `messages`.
fn request(messages: Value) -> Value {
    json!({
        "model": MODEL,
        "stream": true,
        "stream_options": {"include_usage": true},
        "tools": tools(),
        "messages": messages,
    })
}

fn opening(prompt: &str) -> Vec<Value> {
    vec![
        json!({"role": "system", "content": INSTRUCTIONS}),
        json!({"role": "user", "content": prompt}),
    ]
}

fn call(id: &str, args: &Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "ask_user", "arguments": args.to_string()}})
}

fn plan_question() -> Value {
    json!({"question": "Which plan do you want?", "options": [{"label": "Basic"}, {"label": "Pro"}]})
}

#[tokio::test]
async fn ask_user_cycle_end_to_end() {
    let prompt = "Set me up with a plan";
    let (server, chunks) = replay(ProviderKind::Openai, &[ASK, ANSWER], prompt).await;
    let suspended = expect_one_suspension(&server, &chunks).await;
    assert_eq!(
        tool_calls(&chunks),
        ask_user_calls(&[("call_Qx7pLr2mVn", &plan_question())])
    );
    let payload = ask_user_payload(&suspended);
    assert_eq!(payload.question, "Which plan do you want?");
    assert_eq!(step_usage(&chunks), [(182, 31)]);

    let first = &server.provider.requests()[0];
    assert_eq!(first.path, "/chat/completions");
    let authorization = first
        .headers
        .get("authorization")
        .map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(authorization, api_key().map(|key| format!("Bearer {key}")));
    assert_eq!(first.body, request(json!(opening(prompt))));

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
            "text_delta",
            "step_finish",
            "finish"
        ]
    );
    assert_eq!(text(&resumed), "Great choice: Pro ✓");
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);
    assert_eq!(finish(&resumed).text, "Great choice: Pro ✓");
    assert_eq!(step_usage(&resumed), [(240, 6)]);
    assert_eq!(
        finish_usage(&resumed),
        (182 + 240, 31 + 6),
        "usage summed over the run"
    );
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), pb::RunStatus::Completed);
    assert_eq!(run_usage(&run), (422, 37));

    let mut messages = opening(prompt);
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call("call_Qx7pLr2mVn", &plan_question())]}));
    messages
        .push(json!({"role": "tool", "tool_call_id": "call_Qx7pLr2mVn", "content": "User answered: Pro"}));
    assert_eq!(
        server.provider.bodies(),
        [request(json!(opening(prompt))), request(json!(messages))]
    );
}

#[tokio::test]
async fn parallel_calls_answered_in_separate_resumes_reach_the_model_together() {
    let prompt = "Introduce yourself and pick a plan";
    let (server, chunks) = replay(ProviderKind::Openai, &[PARALLEL, ANSWER], prompt).await;
    let name_question = json!({"question": "What should I call you?"});
    let plan_question = json!({"question": "Which plan?", "options": [{"label": "Basic"}, {"label": "Pro"}]});
    assert_eq!(
        tool_calls(&chunks),
        ask_user_calls(&[("call_name01", &name_question), ("call_plan02", &plan_question)])
    );
    assert_eq!(suspensions(&chunks).len(), 2);
    let id = run_id(&chunks);

    let partial = server
        .resume(resume_request(&id, "call_plan02", Answer::Text("Pro".into())))
        .await
        .expect("first Resume");
    assert_eq!(
        kinds(&partial),
        ["start", "tool_result", "tool_call_suspended", "finish"]
    );
    assert_eq!(
        server.provider.requests().len(),
        1,
        "the model waits for every result"
    );

    let resumed = server
        .resume(resume_request(&id, "call_name01", Answer::Text("Ada".into())))
        .await
        .expect("second Resume");
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);
    assert_eq!(finish_usage(&resumed), (190 + 240, 58 + 6));

    let mut messages = opening(prompt);
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
        call("call_name01", &name_question),
        call("call_plan02", &plan_question),
    ]}));
    messages.push(json!({"role": "tool", "tool_call_id": "call_plan02", "content": "User answered: Pro"}));
    messages.push(json!({"role": "tool", "tool_call_id": "call_name01", "content": "User answered: Ada"}));
    assert_eq!(server.provider.bodies()[1], request(json!(messages)));
}

#[tokio::test]
async fn invalid_argument_json_is_an_error_result_and_the_run_goes_on() {
    let prompt = "Pick a plan for me";
    let (server, chunks) = replay(ProviderKind::Openai, &[INVALID_JSON, RETRY], prompt).await;
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
    let raw = r#"{"question": "Which plan?", "options": [{"label": "Basic"},]}"#;
    let calls = tool_calls(&chunks);
    assert_eq!(calls[0].0, "call_bad001");
    assert_eq!(calls[0].2, json!({"value": raw}), "the raw arguments are shown");
    let result = &tool_results(&chunks)[0];
    assert!(result.is_error);
    assert!(
        result
            .content
            .starts_with("Invalid JSON in arguments for ask_user: trailing comma"),
        "{}",
        result.content
    );
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Suspended);
    let run = server.get_run(&run_id(&chunks)).await;
    assert_eq!(status_of(&run), pb::RunStatus::Suspended);
    assert_eq!(run_usage(&run), (150 + 230, 20 + 25));

    let mut messages = opening(prompt);
    messages
        .push(json!({"role": "assistant", "content": null, "tool_calls": [call("call_bad001", &json!({}))]}));
    messages.push(json!({"role": "tool", "tool_call_id": "call_bad001", "content": result.content}));
    assert_eq!(server.provider.bodies()[1], request(json!(messages)));
}
