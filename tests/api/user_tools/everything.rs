//! The official MCP reference server, `@modelcontextprotocol/server-everything`
//! (npm, pinned in `tests/mcp_everything/package-lock.json`; it speaks
//! 2025-11-25), as an MCP tool server of a real agentd process over stdio,
//! as docs/tools.md configures it: a plain call; its "URL elicitation
//! required" error (-32042), put to the person as a URL question and the
//! call made again; and agentd stopped (SIGTERM) while the server waits on
//! its `elicitation/create`, which leaves no server process behind.

use std::time::Duration;

use agentd::pb::{self, resume_request::Answer};

use super::elicitation::exits_within;
use crate::helpers::{collect, finish, resume_request, run_id, suspensions, tool_results};
use crate::process::ServerProcess;

/// The folder where `npm ci` installed server-everything (`.ci/run` does).
const EVERYTHING: &str = "AGENTD_TEST_MCP_EVERYTHING";

fn accept() -> Answer {
    Answer::Elicitation(pb::ElicitationResponse {
        action: pb::ElicitationAction::Accept as i32,
        content: None,
    })
}

/// The one suspension of `chunks`: an elicitation, its mode and URL.
fn asked(chunks: &[pb::AgentChunk]) -> pb::Elicitation {
    let suspended = suspensions(chunks);
    assert_eq!(suspended.len(), 1, "one suspension: {chunks:?}");
    match suspended[0].suspend_payload.clone().and_then(|p| p.kind) {
        Some(pb::suspend_payload::Kind::Elicitation(asked)) => asked,
        other => panic!("an elicitation: {other:?}"),
    }
}

/// The processes whose parent is `parent` and whose command line
/// contains `name`.
fn children_named(parent: u32, name: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{parent}/task")).expect("the process's tasks");
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for pid in children
            .split_whitespace()
            .filter_map(|pid| pid.parse::<u32>().ok())
        {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(name) {
                found.push(pid);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs server-everything installed: set AGENTD_TEST_MCP_EVERYTHING (npm ci in tests/mcp_everything); .ci/run runs it"]
async fn server_everything_over_stdio() {
    let folder = std::env::var(EVERYTHING)
        .unwrap_or_else(|_| panic!("{EVERYTHING} names tests/mcp_everything with its packages installed"));
    let command = format!("{folder}/node_modules/.bin/mcp-server-everything");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("agentd.toml");
    std::fs::write(
        &config,
        format!(
            r#"
            [[mcp_servers]]
            name = "everything"
            command = {command:?}
            args = ["stdio"]
            startup_timeout = "30s"

            [[agents]]
            id = "tester"
            model = "scripted"
            tools = ["mcp:everything/echo", "mcp:everything/trigger-url-elicitation", "mcp:everything/trigger-elicitation-request"]
            "#
        ),
    )
    .expect("write the config");
    let args = ["--config", config.to_str().expect("a UTF-8 path")];
    let mut agentd = ServerProcess::start_with(&dir.path().join("data"), &args, &[]);
    let mut client = agentd.client().await;

    let chunks = crate::process::stream_prompt(&mut client, r#"call echo {"message": "hi"}"#).await;
    assert_eq!(tool_results(&chunks).remove(0).content, "Echo: hi");

    // -32042: the page it names first is a URL question; accepted, the
    // call is made again, which asks on its live session for the page.
    let chunks = crate::process::stream_prompt(
        &mut client,
        r#"call trigger-url-elicitation {"url": "https://example.com/connect", "errorPath": true}"#,
    )
    .await;
    assert_eq!(
        finish(&chunks).reason,
        pb::FinishReason::Suspended as i32,
        "{chunks:?}"
    );
    let first = asked(&chunks);
    assert_eq!(first.mode, pb::ElicitationMode::Url as i32);
    assert!(first.url.starts_with("https://"), "{}", first.url);
    let run = run_id(&chunks);
    let again = client
        .resume(resume_request(&run, "", accept()))
        .await
        .expect("Resume");
    let chunks = collect(again.into_inner()).await.expect("the retry");
    let second = asked(&chunks);
    assert_eq!(second.mode, pb::ElicitationMode::Url as i32);
    assert_eq!(second.url, "https://example.com/connect");
    let done = client
        .resume(resume_request(&run, "", accept()))
        .await
        .expect("Resume");
    let chunks = collect(done.into_inner()).await.expect("the result");
    let result = tool_results(&chunks).remove(0);
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(finish(&chunks).reason, pb::FinishReason::Stop as i32);

    // A form on its live session, and agentd stopped meanwhile.
    let chunks = crate::process::stream_prompt(&mut client, "call trigger-elicitation-request {}").await;
    assert_eq!(asked(&chunks).mode, pb::ElicitationMode::Form as i32);
    drop(client);
    let servers = children_named(agentd.pid(), "mcp-server-everything");
    assert_eq!(servers.len(), 1, "one server process: {servers:?}");
    let pid = servers[0];
    let status = agentd.terminate(Duration::from_secs(30)).await;
    assert!(status.success(), "agentd stopped cleanly: {status}");
    let gone = tokio::task::spawn_blocking(move || exits_within(pid, Duration::from_secs(20)))
        .await
        .expect("the wait");
    assert!(
        gone,
        "server-everything ({pid}) still runs after agentd stopped\n{}",
        agentd.log_text()
    );
}
