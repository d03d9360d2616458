//! History windowing through the API: an agent with `history_max_messages`
//! sends the model only the newest messages of its thread, and never a
//! tool result without the call that produced it.

use agentd::agent::AgentSpec;

use super::{on_thread, stream};
use crate::helpers::{run_id, settings_in, text, TestServer};

async fn server_with_window(max_messages: usize) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(dir.path());
    settings.agents = vec![AgentSpec {
        history_max_messages: Some(max_messages),
        ..AgentSpec::assistant()
    }];
    (TestServer::start_with(settings).await, dir)
}

/// A thread whose first run asked the plan question and got `Pro`: user,
/// assistant (the call), tool (the answer), assistant (the closing text).
async fn answered_thread(server: &TestServer, thread: &str) {
    let chunks = stream(server, on_thread(thread, "pick a plan"))
        .await
        .expect("first run");
    server.resume_text(&run_id(&chunks), "Pro").await.expect("Resume");
}

#[tokio::test]
async fn the_window_never_separates_a_call_from_its_result() {
    // The model would see: user, call, result, closing text, recap.
    let cases = [
        // Room for 3: the call and its result would not both fit, so both
        // go; the window must not start with the result.
        (
            3,
            "Recap: 2 messages, the first from the assistant. Earlier messages: none. Answers: none.",
        ),
        (
            4,
            "Recap: 4 messages, the first from the assistant. Earlier messages: none. Answers: Pro.",
        ),
        (
            5,
            "Recap: 5 messages, the first from the user. Earlier messages: \"pick a plan\". Answers: Pro.",
        ),
        (
            50,
            "Recap: 5 messages, the first from the user. Earlier messages: \"pick a plan\". Answers: Pro.",
        ),
    ];
    for (max_messages, expected) in cases {
        let (server, _dir) = server_with_window(max_messages).await;
        answered_thread(&server, "windowed").await;
        let recap = stream(&server, on_thread("windowed", "recap"))
            .await
            .expect("recap run");
        assert_eq!(text(&recap), expected, "history_max_messages = {max_messages}");
    }
}

#[tokio::test]
async fn the_store_keeps_everything() {
    let (server, _dir) = server_with_window(1).await;
    answered_thread(&server, "kept").await;
    let recap = stream(&server, on_thread("kept", "recap"))
        .await
        .expect("recap run");
    assert_eq!(
        text(&recap),
        "Recap: 1 message, the first from the user. Earlier messages: none. Answers: none."
    );
    let thread = super::get_thread(&server, "kept").await.expect("GetThread");
    assert_eq!(thread.messages.len(), 6, "{:?}", super::transcript(&thread));
}

/// The configuration guide's example file sets the thread and duration
/// settings it shows.
#[test]
fn the_configuration_guide_example_parses() {
    let guide = include_str!("../../../docs/configuration.md");
    let blocks = crate::providers::config::toml_blocks(guide, "The configuration file");
    let file: agentd::server::FileConfig = toml::from_str(&blocks[0]).expect("the example parses");
    assert_eq!(
        file.threads.retention,
        Some(std::time::Duration::from_secs(30 * 86_400))
    );
    let day = std::time::Duration::from_secs(86_400);
    assert_eq!(file.server.suspend_ttl, Some(day));
    let planner = file.agents.iter().find(|a| a.id == "planner").expect("planner");
    assert_eq!(planner.suspend_ttl, Some(day / 12));
    let quiet = file.agents.iter().find(|a| a.id == "quiet").expect("quiet");
    assert_eq!(quiet.history_max_messages, Some(40));
    assert_eq!(quiet.history_max_tokens, Some(16_000));
}
