//! The scripted model's `call TOOL {json}` directive through the API: it
//! calls any tool by name, an unknown tool is an error result the model
//! sees, and JSON that does not parse gets a plain-text answer.

use agentd::pb::{FinishReason, RunStatus};

use crate::helpers::*;

#[tokio::test]
async fn call_directive_calls_the_named_tool_with_its_arguments() {
    let server = TestServer::start().await;
    // `plain` would answer in text: the directive takes precedence.
    let chunks = server
        .stream(r#"plain: call ask_user {"question": "Which city?", "options": [{"label": "Oslo"}, {"label": "Rome"}]}"#)
        .await;
    let suspended = suspensions(&chunks);
    assert_eq!(suspended.len(), 1);
    let payload = ask_user_payload(&suspended[0]);
    assert_eq!(payload.question, "Which city?");
    assert_eq!(payload.options.len(), 2);
    let done = server.resume_text(&run_id(&chunks), "Rome").await.unwrap();
    assert_eq!(finish(&done).text, "Thanks! You answered: Rome.");
}

#[tokio::test]
async fn call_of_an_unknown_tool_is_an_error_result() {
    let server = TestServer::start().await;
    let chunks = server.stream(r#"call human_review {"draft": "x"}"#).await;
    let results = tool_results(&chunks);
    assert_eq!(results.len(), 1);
    assert!(results[0].is_error);
    assert_eq!(results[0].content, "Unknown tool: human_review");
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    assert_eq!(
        finish(&chunks).text,
        "The tool reported an error: Unknown tool: human_review"
    );
}

#[tokio::test]
async fn call_with_invalid_json_is_answered_in_plain_text() {
    let server = TestServer::start().await;
    let chunks = server.stream(r#"call ask_user {question: "x"}"#).await;
    assert!(!kinds(&chunks).contains(&"tool_call"));
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    let text = finish(&chunks).text;
    assert!(
        text.starts_with("I did not call any tool: the call directive is invalid: the JSON arguments of ask_user do not parse"),
        "{text}"
    );
    let run = server.get_run(&run_id(&chunks)).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
}
