//! Each hard limit just under and just over: under it the request is
//! served; over it the error names the limit (`limits.<key>`) in its
//! message and its ErrorInfo, and the request field in a BadRequest.

use std::time::Duration;

use agentd::limits::Limits;
use agentd::pb;
use prost::Message as _;
use serde_json::json;
use tonic::{Code, Status};
use tonic_types::StatusExt;

use super::server::{prompt, start, KeyedClient, SecureServer};
use crate::helpers::{finish_reason, run_id, suspensions, tool_results};

async fn server_with(limits: Limits) -> SecureServer {
    SecureServer::start(move |_, settings| settings.limits = limits).await
}

/// Asserts `status` is `code` for `limit`, with the field in a BadRequest.
fn assert_over(status: &Status, code: Code, limit: &str, field: Option<&str>) {
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status.message().contains(&format!("limits.{limit}")),
        "the message names limits.{limit}: {status:?}"
    );
    let info = status.get_details_error_info().expect("ErrorInfo");
    assert_eq!(
        info.metadata.get("limit").map(String::as_str),
        Some(limit),
        "{info:?}"
    );
    if let Some(field) = field {
        let bad = status.get_details_bad_request().expect("BadRequest");
        assert_eq!(bad.field_violations[0].field, field, "{bad:?}");
    }
}

#[tokio::test]
async fn request_size() {
    const MAX: usize = 2000;
    let server = server_with(Limits {
        max_request_bytes: MAX,
        ..Limits::default()
    })
    .await;
    let mut client = server.client(None).await;
    // A prompt that makes the encoded request exactly `size` bytes.
    let sized = |size: usize| {
        let mut request = prompt(String::new());
        let mut padding = size;
        loop {
            request.prompt = format!("plain {}", "x".repeat(padding));
            match request.encoded_len() {
                len if len == size => return request,
                len if len > size => padding -= len - size,
                len => padding += size - len,
            }
        }
    };
    let at = sized(MAX);
    assert_eq!(at.encoded_len(), MAX);
    let chunks = start(&mut client, at)
        .await
        .expect("a request of exactly the limit");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);

    let over = start(&mut client, sized(MAX + 1)).await.unwrap_err();
    assert_over(&over, Code::ResourceExhausted, "max_request_bytes", None);
    let info = over.get_details_error_info().unwrap();
    assert_eq!(info.reason, "REQUEST_TOO_LARGE");
    assert_eq!(info.metadata.get("actual").map(String::as_str), Some("2001"));

    // Unary calls too, and the connection keeps serving.
    let huge = pb::GetRunRequest {
        run_id: "x".repeat(MAX * 10),
    };
    let status = client.get_run(huge).await.unwrap_err();
    assert_over(&status, Code::ResourceExhausted, "max_request_bytes", None);
    client
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("still serving");
}

#[tokio::test]
async fn prompt_bytes() {
    let server = server_with(Limits {
        max_prompt_bytes: 100,
        ..Limits::default()
    })
    .await;
    let mut client = server.client(None).await;
    let text = |bytes: usize| format!("plain {}", "é".repeat((bytes - 6) / 2)) + &"x".repeat((bytes - 6) % 2);
    assert_eq!(text(100).len(), 100);
    start(&mut client, prompt(text(100)))
        .await
        .expect("a prompt of exactly the limit");
    let over = start(&mut client, prompt(text(101))).await.unwrap_err();
    assert_over(&over, Code::InvalidArgument, "max_prompt_bytes", Some("prompt"));

    // The contents of all messages count together.
    let messages = |sizes: &[usize]| pb::StreamAgentRequest {
        messages: sizes
            .iter()
            .map(|&size| pb::Message {
                role: pb::Role::User as i32,
                content: text(size),
            })
            .collect(),
        ..Default::default()
    };
    start(&mut client, messages(&[50, 50]))
        .await
        .expect("100 bytes in two messages");
    let over = start(&mut client, messages(&[50, 51])).await.unwrap_err();
    assert_over(&over, Code::InvalidArgument, "max_prompt_bytes", Some("messages"));
}

#[tokio::test]
async fn number_of_messages() {
    let server = server_with(Limits {
        max_messages: 3,
        ..Limits::default()
    })
    .await;
    let mut client = server.client(None).await;
    let messages = |count: usize| pb::StreamAgentRequest {
        messages: (0..count)
            .map(|i| pb::Message {
                role: pb::Role::User as i32,
                content: format!("plain message {i}"),
            })
            .collect(),
        ..Default::default()
    };
    start(&mut client, messages(3)).await.expect("three messages");
    let over = start(&mut client, messages(4)).await.unwrap_err();
    assert_over(&over, Code::InvalidArgument, "max_messages", Some("messages"));
}

#[tokio::test]
async fn steps_per_run() {
    let server = server_with(Limits {
        max_steps_per_run: 3,
        ..Limits::default()
    })
    .await;
    let mut client = server.client(None).await;
    let with_steps = |max_steps: u32| pb::StreamAgentRequest {
        prompt: "plain".into(),
        options: Some(pb::RunOptions {
            max_steps,
            ..Default::default()
        }),
        ..Default::default()
    };
    start(&mut client, with_steps(3))
        .await
        .expect("max_steps at the limit");
    let over = start(&mut client, with_steps(4)).await.unwrap_err();
    assert_over(
        &over,
        Code::InvalidArgument,
        "max_steps_per_run",
        Some("options.max_steps"),
    );

    // An agent's own max_steps (10 by default) is capped too.
    let server = server_with(Limits {
        max_steps_per_run: 1,
        ..Limits::default()
    })
    .await;
    let mut client = server.client(None).await;
    let chunks = start(&mut client, prompt("invalid")).await.unwrap();
    assert_eq!(finish_reason(&chunks), pb::FinishReason::MaxSteps);
}

/// Limits small enough to reach with a few characters.
fn small_question_limits() -> Limits {
    Limits {
        max_question_chars: 20,
        max_options: 3,
        max_option_label_chars: 5,
        max_option_description_chars: 10,
        ..Limits::default()
    }
}

async fn execute_ask_user(client: &mut KeyedClient, args: serde_json::Value) -> pb::ExecuteToolResponse {
    client
        .execute_tool(pb::ExecuteToolRequest {
            tool_name: "ask_user".into(),
            args: Some(agentd::grpc::convert::json_to_struct(&args)),
            agent_id: String::new(),
        })
        .await
        .expect("ExecuteTool")
        .into_inner()
}

fn options(labels: &[&str], description: &str) -> serde_json::Value {
    labels
        .iter()
        .map(|label| json!({"label": label, "description": description}))
        .collect()
}

#[tokio::test]
async fn ask_user_question_options_labels_and_descriptions() {
    let server = server_with(small_question_limits()).await;
    let mut client = server.client(None).await;
    // Characters, not bytes: é is two bytes.
    let cases = [
        (
            json!({"question": "é".repeat(20)}),
            json!({"question": "é".repeat(21)}),
            "max_question_chars",
        ),
        (
            json!({"question": "Q?", "options": options(&["a", "b", "c"], "")}),
            json!({"question": "Q?", "options": options(&["a", "b", "c", "d"], "")}),
            "max_options",
        ),
        (
            json!({"question": "Q?", "options": options(&["ééééé"], "")}),
            json!({"question": "Q?", "options": options(&["éééééé"], "")}),
            "max_option_label_chars",
        ),
        (
            json!({"question": "Q?", "options": options(&["a"], &"d".repeat(10))}),
            json!({"question": "Q?", "options": options(&["a"], &"d".repeat(11))}),
            "max_option_description_chars",
        ),
    ];
    for (under, over, limit) in cases {
        let served = execute_ask_user(&mut client, under.clone()).await;
        assert!(!served.is_error, "{under} is within the limits: {served:?}");
        assert!(served.content.starts_with("[Question for user]: "), "{served:?}");
        let refused = execute_ask_user(&mut client, over.clone()).await;
        assert!(refused.is_error, "{over} is over limits.{limit}: {refused:?}");
        assert!(refused.content.starts_with("Failed to ask user: "), "{refused:?}");
        assert!(
            refused.content.contains(&format!("(limits.{limit})")),
            "{refused:?}"
        );
    }
}

#[tokio::test]
async fn ask_user_over_a_limit_in_a_run_is_an_error_result_for_the_model() {
    let server = server_with(small_question_limits()).await;
    let mut client = server.client(None).await;
    let call = |question: &str| prompt(format!("call ask_user {}", json!({ "question": question })));

    let under = start(&mut client, call(&"q".repeat(20))).await.unwrap();
    assert_eq!(finish_reason(&under), pb::FinishReason::Suspended);
    assert_eq!(suspensions(&under).len(), 1);

    let over = start(&mut client, call(&"q".repeat(21))).await.unwrap();
    let results = tool_results(&over);
    assert_eq!(results.len(), 1, "{over:?}");
    assert!(results[0].is_error);
    assert_eq!(
        results[0].content,
        "Failed to ask user: question is longer than 20 characters (limits.max_question_chars)."
    );
    assert_eq!(
        finish_reason(&over),
        pb::FinishReason::Stop,
        "the run goes on: {over:?}"
    );
}

#[tokio::test]
async fn concurrent_streams_per_connection() {
    let server = server_with(Limits {
        max_concurrent_streams_per_connection: 2,
        ..Limits::default()
    })
    .await;
    let mut client = server.client(None).await;
    // Two suspended runs: a subscription after their last chunk waits for
    // a Resume, holding a stream open.
    let mut runs = Vec::new();
    for _ in 0..2 {
        let chunks = start(&mut client, prompt("Help me pick a plan")).await.unwrap();
        runs.push((run_id(&chunks), chunks.last().unwrap().seq));
    }
    let mut held = Vec::new();
    for (run, last_seq) in &runs {
        let subscription = pb::SubscribeRunRequest {
            run_id: run.clone(),
            after_seq: *last_seq,
        };
        let stream = tokio::time::timeout(Duration::from_secs(5), client.subscribe_run(subscription))
            .await
            .expect("two streams fit on one connection")
            .expect("SubscribeRun");
        held.push(stream.into_inner());
    }
    // A third request on the same connection waits for a free stream.
    let mut third = client.clone();
    let waiting = tokio::spawn(async move { third.list_agents(pb::ListAgentsRequest {}).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "a third stream must wait while two are open"
    );
    // Another connection is not affected.
    let mut other = server.client(None).await;
    other
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("another connection");
    // Closing one stream lets the third through.
    drop(held.pop());
    let served = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the third request goes through once a stream closes")
        .expect("task");
    served.expect("ListAgents");
}
