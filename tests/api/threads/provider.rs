//! History through a real provider's wire format: on a thread, every run's
//! request body to an OpenAI-compatible provider carries the earlier runs'
//! messages, the question's tool call and its answer included.

use agentd::model::ProviderKind;
use serde_json::{json, Value};

use super::on_thread;
use crate::helpers::{collect, run_id, text};
use crate::providers::{harness, Reply, INSTRUCTIONS};

const ASK: &str = include_str!("../providers/transcripts/openai_ask_user.sse");
const ANSWER: &str = include_str!("../providers/transcripts/openai_answer.sse");

fn messages_of(body: &Value) -> Vec<Value> {
    body["messages"].as_array().expect("messages").clone()
}

#[tokio::test]
async fn later_requests_carry_the_earlier_runs_and_answers() {
    let server = harness(
        ProviderKind::Openai,
        vec![
            Reply::sse(ASK),
            Reply::sse(ANSWER),
            Reply::sse(ANSWER),
            Reply::sse(ANSWER),
        ],
    )
    .await;
    let start = |prompt: &str| {
        let mut client = server.client();
        let request = on_thread("provider-thread", prompt);
        async move {
            let response = client.stream_agent(request).await.expect("StreamAgent");
            collect(response.into_inner()).await.expect("stream")
        }
    };
    let first = start("Set me up with a plan").await;
    let answered = server.resume_text(&run_id(&first), "Pro").await.expect("Resume");
    assert_eq!(text(&answered), "Great choice: Pro ✓");
    start("What did I choose?").await;
    start("Thanks").await;

    let bodies = server.provider.bodies();
    assert_eq!(bodies.len(), 4);
    let call = json!({
        "id": "call_Qx7pLr2mVn",
        "type": "function",
        "function": {
            "name": "ask_user",
            "arguments": json!({"question": "Which plan do you want?", "options": [{"label": "Basic"}, {"label": "Pro"}]}).to_string(),
        },
    });
    let first_run = vec![
        json!({"role": "user", "content": "Set me up with a plan"}),
        json!({"role": "assistant", "content": null, "tool_calls": [call]}),
        json!({"role": "tool", "tool_call_id": "call_Qx7pLr2mVn", "content": "User answered: Pro"}),
        json!({"role": "assistant", "content": "Great choice: Pro ✓"}),
    ];
    let system = json!({"role": "system", "content": INSTRUCTIONS});

    // The second run's request: the instructions once, the first run whole,
    // then the new message.
    let mut expected = vec![system.clone()];
    expected.extend(first_run.clone());
    expected.push(json!({"role": "user", "content": "What did I choose?"}));
    assert_eq!(messages_of(&bodies[2]), expected);

    // The third run's: both earlier runs.
    expected.push(json!({"role": "assistant", "content": "Great choice: Pro ✓"}));
    expected.push(json!({"role": "user", "content": "Thanks"}));
    assert_eq!(messages_of(&bodies[3]), expected);
}
