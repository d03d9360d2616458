//! agentd's agents as MCP tools at `/mcp`: the guard in front of it over
//! plain HTTP (no key is 401, a foreign Origin or Host 403), the official
//! MCP Python SDK (`tests/mcp/mcp_client_test.py`: tools, questions
//! answered in the elicitation callback on both protocol generations,
//! option descriptions, decline, cancel, approvals remembered in a thread
//! through the form, an invalid answer asked again in the same call, a
//! client without elicitation, keys and tenants, and a question answered
//! through gRPC while the MCP call waits: the form withdrawn with
//! `notifications/cancelled`, a late answer refused in words, a late
//! 2026-07-28 retry told what the run became), and the official
//! conformance tool.

use std::process::Stdio;

use agentd::pb;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tonic::Code;

use crate::helpers::{expect_code, http, resume_request, TestServer};
use crate::security::auth::{two_tenants, ACME_KEY, GLOBEX_KEY};

/// The Python with `mcp` installed (`.ci/run` makes one).
const PYTHON: &str = "AGENTD_TEST_MCP_PYTHON";

/// The conformance tool: a command that runs `@modelcontextprotocol/conformance`
/// with Node 22 (`.ci/run` installs both).
const CONFORMANCE: &str = "AGENTD_TEST_MCP_CONFORMANCE";

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

async fn post(url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(INITIALIZE);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("POST /mcp")
}

#[tokio::test]
async fn the_endpoint_wants_a_key_and_refuses_other_sites() {
    let keyed = two_tenants().await;
    let url = format!("http://{}/mcp", keyed.addr);
    // A host is told what to send, in the body and in the challenge.
    let challenge = |response: &reqwest::Response| {
        response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    let send = "send the header Authorization: Bearer <API key>";
    let none = post(&url, &[]).await;
    assert_eq!(none.status(), 401, "no key");
    let header = challenge(&none);
    assert!(
        header.starts_with("Bearer realm=\"agentd\", error_description=\""),
        "{header}"
    );
    assert!(header.contains(send), "{header}");
    let body: serde_json::Value = none.json().await.expect("a JSON-RPC error");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("send the header `Authorization: Bearer <API key>`"),
        "{body}"
    );
    assert_eq!(body["error"]["data"]["reason"], "MISSING_CREDENTIALS", "{body}");
    let wrong = post(&url, &[("authorization", "Bearer not-a-key")]).await;
    assert_eq!(wrong.status(), 401, "a wrong key");
    let header = challenge(&wrong);
    assert!(
        header.starts_with("Bearer realm=\"agentd\", error=\"invalid_token\", error_description=\""),
        "{header}"
    );
    assert!(header.contains(send), "{header}");

    // A host that starts OAuth discovery and registration after the 401
    // is told, in OAuth's error shape, that there is no OAuth and what to
    // send.
    for (method, path) in [
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/oauth-authorization-server/mcp"),
        ("GET", "/.well-known/openid-configuration"),
        ("POST", "/register"),
        ("GET", "/authorize"),
        ("POST", "/token"),
    ] {
        let url = format!("http://{}{path}", keyed.addr);
        let request = match method {
            "GET" => http().get(&url),
            _ => http()
                .post(&url)
                .header("content-type", "application/json")
                .body("{}"),
        };
        let response = request.send().await.expect(path);
        assert_eq!(response.status(), 404, "{path}");
        let body: serde_json::Value = response.json().await.expect(path);
        assert_eq!(body["error"], "oauth_not_supported", "{path}: {body}");
        let description = body["error_description"].as_str().unwrap_or_default();
        assert!(description.contains(send), "{path}: {body}");
    }
    let bearer = format!("Bearer {ACME_KEY}");
    let ok = post(&url, &[("authorization", &bearer)]).await;
    assert_eq!(ok.status(), 200, "a key of a tenant");
    assert!(ok.headers().contains_key("mcp-session-id"), "a session begins");

    let open = TestServer::start().await;
    let url = format!("http://{}/mcp", open.addr);
    let foreign = post(&url, &[("origin", "http://evil.example.com")]).await;
    assert_eq!(foreign.status(), 403, "a page of another site");
    let own = format!("http://{}", open.addr);
    assert_eq!(
        post(&url, &[("origin", &own)]).await.status(),
        200,
        "a page of this server"
    );
    let rebound = post(&url, &[("host", "evil.example.com")]).await;
    assert_eq!(rebound.status(), 403, "a host name outside the allowed ones");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn the_mcp_python_sdk_drives_agentd() {
    let python =
        std::env::var(PYTHON).unwrap_or_else(|_| panic!("{PYTHON} names a Python with mcp installed"));
    // The embedded defaults' agents, and `careful`, whose ask_user calls
    // each wait for approval.
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = crate::helpers::settings_in(temp.path());
    settings.agents.push(crate::helpers::careful());
    let open = TestServer::start_with(settings).await;
    let keyed = two_tenants().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/mcp_client_test.py");
    let mut child = Command::new(python)
        .arg(script)
        .args([
            "--open",
            &open.addr.to_string(),
            "--keyed",
            &keyed.addr.to_string(),
        ])
        .args(["--acme-key", ACME_KEY, "--globex-key", GLOBEX_KEY])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run the MCP client");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut output = String::new();
    let (mut answered, mut granted, mut waiting) = (Vec::new(), Vec::new(), None);
    let mut client = open.client();
    while let Some(line) = lines.next_line().await.expect("read the client") {
        output.push_str(&line);
        output.push('\n');
        if let Some(run_id) = line.strip_prefix("run: ") {
            answered.push(run_id.to_owned());
        } else if let Some(run_id) = line.strip_prefix("granted run: ") {
            granted.push(run_id.to_owned());
        } else if let Some(run_id) = line.strip_prefix("waiting run: ") {
            waiting = Some(run_id.to_owned());
        } else if line == "asked" {
            // The MCP call waits in its callback: the newest suspended run
            // is its run. Answered here, through gRPC.
            let runs = client
                .list_runs(pb::ListRunsRequest {
                    status: pb::RunStatus::Suspended as i32,
                    page_size: 1,
                    ..Default::default()
                })
                .await
                .expect("ListRuns")
                .into_inner()
                .runs;
            let run_id = &runs.first().expect("a suspended run").run_id;
            open.resume_text(run_id, "Enterprise")
                .await
                .expect("the gRPC answer");
            stdin.write_all(b"answered\n").await.expect("tell the client");
        }
    }
    let status = child.wait().await.expect("the client ran");
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        tokio::io::AsyncReadExt::read_to_string(&mut err, &mut stderr)
            .await
            .ok();
    }
    println!("{output}");
    assert!(
        status.success() && output.contains("\"result\": \"passed\""),
        "the MCP client failed:\n{output}\n{stderr}"
    );

    // Answered through MCP: another surface's answer comes too late.
    assert_eq!(answered.len(), 2, "{output}");
    for run_id in &answered {
        let late = open
            .resume(resume_request(
                run_id,
                "",
                pb::resume_request::Answer::Text("Basic".into()),
            ))
            .await;
        expect_code(late, Code::FailedPrecondition);
        let run = open.get_run(run_id).await;
        assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
        assert_eq!(run.decisions[0].source(), pb::DecisionSource::Mcp);
    }
    // Approved by the grant its thread's earlier run made through MCP.
    assert_eq!(granted.len(), 2, "{output}");
    for run_id in &granted {
        crate::helpers::assert_granted_then_answered(&open, run_id, pb::DecisionSource::Mcp).await;
    }
    // The question a client without elicitation read waits for any
    // surface's answer.
    let waiting = waiting.expect("a waiting run");
    open.resume_text(&waiting, "Pro")
        .await
        .expect("answered through gRPC");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the MCP conformance tool and Node 22: set AGENTD_TEST_MCP_CONFORMANCE; .ci/run runs it"]
async fn the_conformance_tool_passes_the_server_scenarios() {
    let command = std::env::var(CONFORMANCE)
        .unwrap_or_else(|_| panic!("{CONFORMANCE} names a command that runs the MCP conformance tool"));
    let open = TestServer::start().await;
    let url = format!("http://localhost:{}/mcp", open.addr.port());
    let mut failed = Vec::new();
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        let output = Command::new("sh")
            .arg("-c")
            .arg(format!("{command} server --url {url} --scenario {scenario}"))
            .output()
            .await
            .expect("run the conformance tool");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        println!("--- {scenario}\n{stdout}\n{stderr}");
        if !output.status.success() || !stdout.contains(" 0 failed") {
            failed.push(scenario);
        }
    }
    assert!(failed.is_empty(), "failed scenarios: {failed:?}");
}
