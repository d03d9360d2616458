//! An MCP server that asks for input (`tests/mcp/elicit_server.py`, written
//! with the official MCP Python SDK) used by an agent, on both protocol
//! generations, over stdio and streamable HTTP: the request suspends the
//! run as a typed elicitation; an answer through Resume reaches the server
//! exactly as given; an answer that breaks the form is refused per field
//! with the run unchanged; decline, cancel and URL requests (a link that
//! is not https: refused where it enters); a run
//! cancelled while the server waits; a kill -9 while suspended,
//! answered after the restart; and agentd stopped while a stdio server
//! waits, which leaves no server process behind.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use agentd::grpc::convert::{json_to_struct, struct_to_json};
use agentd::pb::{self, resume_request::Answer};
use serde_json::{json, Value};
use tonic::Code;
use tonic_types::StatusExt;

use super::*;
use crate::process::ServerProcess;

/// The Python with the MCP SDK (`mcp`) installed (`.ci/run` makes one).
const PYTHON: &str = "AGENTD_TEST_MCP_PYTHON";

fn python() -> String {
    std::env::var(PYTHON)
        .unwrap_or_else(|_| panic!("{PYTHON} names a Python with the MCP SDK (mcp) installed"))
}

fn script() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/elicit_server.py")
}

/// `[[mcp_servers]]` for the server over stdio, speaking `protocol`.
pub(crate) fn stdio(protocol: &str) -> String {
    format!(
        r#"
        [[mcp_servers]]
        name = "travel"
        command = {python:?}
        args = [{script:?}, "stdio"]
        protocol_version = "{protocol}"
        timeout = "20s"
        startup_timeout = "30s"
        "#,
        python = python(),
        script = script(),
    )
}

/// The server over streamable HTTP, in a process of its own.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    /// Starts it and waits until it says it is listening.
    fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut child = Command::new(python())
            .args([script(), "http", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the MCP server");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("Uvicorn running on") => break,
                Some(Ok(_)) => {}
                _ => panic!("the MCP server stopped before it listened"),
            }
        }
        // Keep draining its log so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    fn config(&self, protocol: &str) -> String {
        format!(
            r#"
            [[mcp_servers]]
            name = "travel"
            url = "{url}"
            protocol_version = "{protocol}"
            timeout = "20s"
            startup_timeout = "30s"
            "#,
            url = self.url,
        )
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn travel(config: &str) -> ToolServer {
    start(vec![agent_with("travel", &["mcp:travel"])], config).await
}

/// The one suspension of `chunks`, which must be an elicitation.
fn elicitation(chunks: &[pb::AgentChunk]) -> (String, pb::Elicitation) {
    let suspended = suspensions(chunks);
    assert_eq!(suspended.len(), 1, "one suspension: {:?}", kinds(chunks));
    let payload = suspended[0].suspend_payload.clone().and_then(|p| p.kind);
    match payload {
        Some(pb::suspend_payload::Kind::Elicitation(asked)) => (suspended[0].tool_call_id.clone(), asked),
        other => panic!("not an elicitation: {other:?}"),
    }
}

fn respond(action: pb::ElicitationAction, content: Option<Value>) -> Answer {
    Answer::Elicitation(pb::ElicitationResponse {
        action: action as i32,
        content: content.as_ref().map(json_to_struct),
    })
}

fn accept(content: Value) -> Answer {
    respond(pb::ElicitationAction::Accept, Some(content))
}

/// Asks for a booking, checks the form it suspends on, and returns the run.
async fn asks_for_a_booking(server: &ToolServer) -> String {
    let chunks = server
        .run("travel", r#"call book {"destination": "Lisbon"}"#)
        .await;
    assert_eq!(finish(&chunks).reason, pb::FinishReason::Suspended as i32);
    let (_, asked) = elicitation(&chunks);
    assert_eq!(asked.server, "travel");
    assert_eq!(asked.message, "Book a stay in Lisbon?");
    assert_eq!(asked.mode, pb::ElicitationMode::Form as i32);
    let schema = struct_to_json(asked.requested_schema.as_ref().expect("a form"));
    assert_eq!(schema["properties"]["email"]["format"], "email");
    assert_eq!(schema["properties"]["nights"]["type"], "integer");
    assert_eq!(schema["properties"]["breakfast"]["type"], "boolean");
    assert_eq!(schema["properties"]["seat"]["enum"], json!(["window", "aisle"]));
    assert_eq!(schema["properties"]["extras"]["type"], "array");
    assert_eq!(schema["required"], json!(["email", "nights"]));
    run_id(&chunks)
}

/// The answer reaches the server exactly as given, after a refused one
/// that left the run as it was.
async fn a_form_is_answered(server: &ToolServer) {
    let run = asks_for_a_booking(server).await;
    let before = server.get_run(&run).await;

    let refused = server
        .resume(resume_request(
            &run,
            "",
            accept(json!({"email": "not an address", "nights": 0, "seat": "middle"})),
        ))
        .await
        .expect_err("the form refuses it");
    assert_eq!(refused.code(), Code::InvalidArgument);
    let fields: Vec<String> = refused
        .get_details_bad_request()
        .expect("a BadRequest")
        .field_violations
        .iter()
        .map(|violation| violation.field.clone())
        .collect();
    for field in [
        "elicitation.content.email",
        "elicitation.content.nights",
        "elicitation.content.seat",
    ] {
        assert!(fields.iter().any(|f| f == field), "{field} in {fields:?}");
    }
    assert_eq!(
        server.get_run(&run).await,
        before,
        "a refused answer changes nothing"
    );

    let given = json!({"email": "ana@example.com", "nights": 2, "budget": 80.5, "breakfast": true,
                       "seat": "aisle", "extras": ["wifi", "pool"]});
    let chunks = server
        .resume(resume_request(&run, "", accept(given.clone())))
        .await
        .expect("Resume");
    let result = tool_results(&chunks).remove(0);
    assert!(!result.is_error, "{}", result.content);
    let received: Value = serde_json::from_str(result.content.trim_start_matches("booked Lisbon: "))
        .unwrap_or_else(|_| panic!("the server says what it received: {}", result.content));
    assert_eq!(received, given);
    assert_eq!(finish(&chunks).reason, pb::FinishReason::Stop as i32);
}

/// Decline and cancel reach the server as such.
async fn decline_and_cancel(server: &ToolServer) {
    for (action, said) in [
        (pb::ElicitationAction::Decline, "not booked (decline)"),
        (pb::ElicitationAction::Cancel, "not booked (cancel)"),
    ] {
        let run = asks_for_a_booking(server).await;
        let with_content = server
            .resume(resume_request(
                &run,
                "",
                respond(action, Some(json!({"nights": 1}))),
            ))
            .await
            .expect_err("no content with decline or cancel");
        assert_eq!(with_content.code(), Code::InvalidArgument);
        let chunks = server
            .resume(resume_request(&run, "", respond(action, None)))
            .await
            .expect("Resume");
        assert_eq!(tool_results(&chunks).remove(0).content, said);
    }
}

/// A URL request: a link to open, accepted without content.
async fn a_url_is_opened(server: &ToolServer) {
    let chunks = server.run("travel", r#"call pay {"amount": 30}"#).await;
    let (_, asked) = elicitation(&chunks);
    assert_eq!(asked.mode, pb::ElicitationMode::Url as i32);
    assert_eq!(asked.url, "https://pay.example.com/checkout?amount=30");
    assert!(asked.requested_schema.is_none());
    let run = run_id(&chunks);
    let chunks = server
        .resume(resume_request(&run, "", accept(json!({}))))
        .await
        .expect("Resume");
    assert_eq!(tool_results(&chunks).remove(0).content, "payment: accept");
}

/// A URL request for a link no person should open (`javascript:`, or
/// `http:` to another host) is refused where it enters: no suspension,
/// nothing any surface could show; the call ends with why (the server that
/// asked on its live session gets an error and says so). A loopback
/// `http:` link is asked.
async fn unsafe_links_are_refused(server: &ToolServer) {
    for url in [
        "javascript:alert(document.cookie)",
        "http://pay.example.com/checkout",
    ] {
        let chunks = server
            .run("travel", &format!(r#"call pay_at {{"url": {url:?}}}"#))
            .await;
        assert!(suspensions(&chunks).is_empty(), "{url}: {:?}", kinds(&chunks));
        assert_eq!(finish(&chunks).reason, pb::FinishReason::Stop as i32);
        let result = tool_results(&chunks).remove(0);
        assert!(
            result.content.contains("request for input") && result.content.contains("refused"),
            "{url}: {}",
            result.content
        );
        assert!(
            result.content.contains("https: (or http: to a loopback host)"),
            "{url}: {}",
            result.content
        );
    }
    let chunks = server
        .run("travel", r#"call pay_at {"url": "http://127.0.0.1:9/pay"}"#)
        .await;
    let (_, asked) = elicitation(&chunks);
    assert_eq!(asked.url, "http://127.0.0.1:9/pay");
}

async fn speaks(server: &ToolServer, version: &str) {
    assert_eq!(
        server.result_of("travel", "call generation {}").await.content,
        version
    );
}

/// The agent of the binary-driven tests: the scripted model with the
/// `travel` MCP server's tools.
const TRAVEL_AGENT: &str = r#"
[[agents]]
id = "travel"
model = "scripted"
tools = ["mcp:travel"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn a_stdio_server_on_the_2026_protocol_asks_through_input_required_results() {
    let server = travel(&stdio("auto")).await;
    speaks(&server, "2026-07-28").await;
    a_form_is_answered(&server).await;
    decline_and_cancel(&server).await;
    a_url_is_opened(&server).await;
    unsafe_links_are_refused(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn a_stdio_server_on_the_2025_protocol_asks_on_its_live_session() {
    let server = travel(&stdio("2025-11-25")).await;
    speaks(&server, "2025-11-25").await;
    a_form_is_answered(&server).await;
    decline_and_cancel(&server).await;
    a_url_is_opened(&server).await;
    unsafe_links_are_refused(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn an_http_server_asks_on_either_protocol() {
    let mcp = HttpServer::start();
    let modern = travel(&mcp.config("auto")).await;
    speaks(&modern, "2026-07-28").await;
    a_form_is_answered(&modern).await;
    a_url_is_opened(&modern).await;
    let legacy = travel(&mcp.config("2025-11-25")).await;
    speaks(&legacy, "2025-11-25").await;
    a_form_is_answered(&legacy).await;
    decline_and_cancel(&legacy).await;
}

/// A run cancelled while the server's request waits on the live session:
/// the server is answered `cancel` and stops waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn a_cancelled_run_lets_the_server_go() {
    let server = travel(&stdio("2025-11-25")).await;
    let run = asks_for_a_booking(&server).await;
    server
        .client()
        .cancel_run(pb::CancelRunRequest {
            run_id: run.clone(),
            reason: "changed plans".into(),
        })
        .await
        .expect("CancelRun");
    assert_eq!(status_of(&server.get_run(&run).await), pb::RunStatus::Cancelled);
    let told = server.result_of("travel", r#"call outcome {"n": 1}"#).await;
    assert_eq!(told.content, "not booked (cancel)");
}

/// agentd killed while suspended: on 2026-07-28 the restarted process
/// retries the call with the stored state and the server goes on (or, a
/// server restarted with agentd, refuses the state it no longer honours);
/// on the 2025 protocol the live request died with the process. The model
/// is told which; Resume succeeds each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn an_answer_after_a_kill_9_reaches_the_server() {
    let mcp = HttpServer::start();
    // On 2026-07-28 the server over HTTP outlives agentd and takes the
    // retry; over stdio it restarts with agentd, with a new key, and
    // refuses the state it gave; on 2025-11-25 the live request is gone.
    let cases = [
        (mcp.config("auto"), "booked Oslo: "),
        (stdio("auto"), "the state it gave may have expired"),
        (mcp.config("2025-11-25"), "ended unanswered"),
    ];
    for (server, told) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("agentd.toml");
        std::fs::write(&config, format!("{TRAVEL_AGENT}\n{server}")).expect("write the config");
        let data = dir.path().join("data");
        let args = ["--config", config.to_str().expect("a UTF-8 path")];
        let mut first = ServerProcess::start_with(&data, &args, &[]);
        let mut client = first.client().await;
        let opening =
            crate::process::stream_prompt(&mut client, r#"call book {"destination": "Oslo"}"#).await;
        let (call, _) = elicitation(&opening);
        let run = run_id(&opening);
        drop(client);
        first.kill_hard();

        let second = ServerProcess::start_with(&data, &args, &[]);
        let mut client = second.client().await;
        let answer = accept(json!({"email": "ana@example.com", "nights": 4}));
        let stream = client
            .resume(resume_request(&run, &call, answer))
            .await
            .expect("Resume after the restart")
            .into_inner();
        let chunks = collect(stream).await.expect("the continuation");
        let result = tool_results(&chunks).remove(0);
        assert!(result.content.contains(told), "{}", result.content);
        let reached = told.starts_with("booked");
        assert_eq!(result.is_error, !reached, "{}", result.content);
        if reached {
            assert!(result.content.contains("\"nights\": 4"), "{}", result.content);
        }
        assert_eq!(finish(&chunks).reason, pb::FinishReason::Stop as i32);
    }
}

/// Waits until process `pid` (not a child of this one) has exited, at
/// most `limit`: on its pidfd, which is readable once the process exits.
/// False if it still runs after `limit`.
#[allow(unsafe_code)]
pub(crate) fn exits_within(pid: u32, limit: std::time::Duration) -> bool {
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: pidfd_open takes a pid and flags, and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        // ESRCH: no such process, it has exited already.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    let fd = libc::c_int::try_from(fd).expect("an fd");
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = libc::c_int::try_from(limit.as_millis()).expect("a timeout in ms");
    // SAFETY: one valid pollfd; the fd is ours and closed right after.
    let ready = unsafe { libc::poll(&mut poll, 1, millis) };
    // SAFETY: closes the fd opened above, once.
    unsafe { libc::close(fd) };
    ready == 1
}

/// agentd stopped (SIGTERM) while a stdio server waits on its request for
/// input (2025-11-25, on the live session): agentd closes the server's
/// stdin, then SIGTERMs it (then SIGKILLs it), as the specification's stdio
/// shutdown says, and the server's process is gone; it is not left running
/// without its parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn stopping_agentd_ends_a_stdio_server_that_waits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("server.pid");
    let config = dir.path().join("agentd.toml");
    let server = format!(
        "{}env = {{ ELICIT_SERVER_PID_FILE = {:?} }}\n",
        stdio("2025-11-25"),
        pid_file.to_str().expect("a UTF-8 path")
    );
    std::fs::write(&config, format!("{TRAVEL_AGENT}\n{server}")).expect("write the config");
    let data = dir.path().join("data");
    let args = ["--config", config.to_str().expect("a UTF-8 path")];
    let mut agentd = ServerProcess::start_with(&data, &args, &[]);
    let mut client = agentd.client().await;
    let opening = crate::process::stream_prompt(&mut client, r#"call book {"destination": "Oslo"}"#).await;
    elicitation(&opening);
    drop(client);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the server wrote its pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(
        !exits_within(pid, std::time::Duration::ZERO),
        "the server runs, waiting on its question"
    );

    let status = agentd.terminate(std::time::Duration::from_secs(30)).await;
    assert!(status.success(), "agentd stopped cleanly: {status}");
    let gone = tokio::task::spawn_blocking(move || exits_within(pid, std::time::Duration::from_secs(20)))
        .await
        .expect("the wait");
    assert!(
        gone,
        "the stdio server {pid} still runs after agentd stopped\n{}",
        agentd.log_text()
    );
    assert!(
        agentd.log_text().contains("MCP server session closed"),
        "{}",
        agentd.log_text()
    );
}

/// A server that answers a call with "URL elicitation required" (-32042,
/// 2025-11-25): the page it names is a URL question to the person; once
/// accepted the call is made again, and a decline ends the call saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn a_url_required_error_is_a_url_question() {
    let server = travel(&stdio("2025-11-25")).await;
    let chunks = server.run("travel", r#"call files {"account": "ana"}"#).await;
    assert_eq!(finish(&chunks).reason, pb::FinishReason::Suspended as i32);
    let (_, asked) = elicitation(&chunks);
    assert_eq!(asked.mode, pb::ElicitationMode::Url as i32);
    assert_eq!(asked.url, "https://files.example.com/sign-in?account=ana");
    assert_eq!(asked.message, "Sign in to the files of ana");
    let run = run_id(&chunks);
    let chunks = server
        .resume(resume_request(&run, "", accept(json!({}))))
        .await
        .expect("Resume");
    let result = tool_results(&chunks).remove(0);
    assert_eq!(
        result.content, "files of ana: notes.txt",
        "made again once accepted"
    );
    assert!(!result.is_error);

    let chunks = server.run("travel", r#"call files {"account": "bo"}"#).await;
    let run = run_id(&chunks);
    let chunks = server
        .resume(resume_request(
            &run,
            "",
            respond(pb::ElicitationAction::Decline, None),
        ))
        .await
        .expect("Resume");
    let result = tool_results(&chunks).remove(0);
    assert!(result.is_error, "{}", result.content);
    assert!(
        result
            .content
            .contains("needs the person to open a page first (https://files.example.com/sign-in?account=bo)"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("they answered decline"),
        "{}",
        result.content
    );
}

/// `protocol_version = "2026-07-28"` pinned for a server that speaks only
/// 2025-11-25: the start stops at once saying so, not that the server
/// cannot be reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn a_pinned_version_the_server_does_not_speak_is_said() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/legacy_server.py");
    let server = |protocol: &str| {
        format!(
            r#"
            [[mcp_servers]]
            name = "legacy"
            command = {python:?}
            args = [{script:?}]
            protocol_version = "{protocol}"
            startup_timeout = "30s"
            "#,
            python = python(),
        )
    };
    let started = std::time::Instant::now();
    let error = start_error(vec![agent_with("a", &["mcp:legacy"])], &server("2026-07-28")).await;
    assert!(
        error.contains(r#"answered but does not speak protocol_version = "2026-07-28""#),
        "{error}"
    );
    assert!(error.contains("Method not found"), "{error}");
    assert!(!error.contains("cannot reach"), "{error}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "said at once, not after the start-up timeout"
    );
    // With "auto" the same server is used on its own generation.
    start(vec![agent_with("a", &["mcp:legacy"])], &server("auto")).await;
}
