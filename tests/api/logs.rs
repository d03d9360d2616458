//! Logs of the real binary: with `--log-format json` every line is a JSON
//! object, and the lines a run writes carry the run's id, agent and tenant
//! in their spans; a setting spelled as earlier versions did is warned of.

use serde_json::Value;

use crate::helpers::{collect, finish_reason, suspensions};
use crate::process::{stream_prompt, ServerProcess};
use crate::security::auth::ACME_KEY;
use crate::security::server::{keyed, write_file};
use agentd::pb;

/// The lines of a JSON log.
fn json_lines(log: &str) -> Vec<Value> {
    log.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

/// The JSON lines of `process`'s log, waiting (at most 10 s) until one of
/// them passes `wanted`, and that line.
async fn wait_for_line(process: &ServerProcess, wanted: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
    let log = process
        .wait_for_log(|log| json_lines(log).iter().any(&wanted))
        .await;
    let lines = json_lines(&log);
    let line = lines
        .iter()
        .find(|line| wanted(line))
        .cloned()
        .expect("the line waited for");
    (line, lines)
}

/// The value of `field` in any span of `line`.
fn span_field<'a>(line: &'a Value, field: &str) -> Option<&'a str> {
    line["spans"]
        .as_array()?
        .iter()
        .find_map(|span| span.get(field).and_then(Value::as_str))
}

#[tokio::test]
async fn json_log_lines_name_the_run_agent_and_tenant() {
    let data = tempfile::tempdir().expect("temp dir");
    let keys = write_file(data.path(), "api.keys", &format!("acme:{ACME_KEY}\n"));
    let process = ServerProcess::start_with(
        data.path(),
        &[
            "--log-format",
            "json",
            "--api-keys-file",
            keys.to_str().expect("a UTF-8 path"),
        ],
        &[],
    );
    let mut client = keyed(process.channel().await, Some(ACME_KEY));
    // Cancelling a running run: the run's execution logs it, inside the
    // run's span.
    let start = pb::StreamAgentRequest {
        prompt: "stream 1000000 every 1 ms".into(),
        ..Default::default()
    };
    let mut stream = client.stream_agent(start).await.unwrap().into_inner();
    let first = stream.message().await.unwrap().expect("the start chunk");
    let run = first.run_id.clone();
    let cancel = pb::CancelRunRequest {
        run_id: run.clone(),
        reason: "changed my mind".into(),
    };
    client.cancel_run(cancel).await.expect("CancelRun");
    let chunks = collect(stream).await.unwrap();
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Cancelled);

    let (line, lines) = wait_for_line(&process, |line| {
        span_field(line, "run_id") == Some(run.as_str()) && line["fields"]["message"] == "run cancelled"
    })
    .await;
    assert_eq!(line["fields"]["reason"], "changed my mind", "{line}");
    assert_eq!(span_field(&line, "tenant"), Some("acme"), "{line}");
    assert_eq!(span_field(&line, "agent"), Some("assistant"), "{line}");
    assert!(
        line["level"].is_string() && line["timestamp"].is_string(),
        "{line}"
    );
    assert!(
        lines.iter().any(|line| line["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("agentd listening on"))),
        "the startup line is JSON too"
    );
}

/// A file key, a flag and a variable spelled as earlier versions spelled
/// them still configure the server, each with one warning that names its
/// current spelling.
#[tokio::test]
async fn deprecated_spellings_still_configure_the_server_and_warn() {
    let data = tempfile::tempdir().expect("temp dir");
    let config = write_file(data.path(), "agentd.toml", "[server]\nsuspend_ttl_secs = 120\n");
    let process = ServerProcess::start_with(
        data.path(),
        &[
            "--config",
            config.to_str().expect("a UTF-8 path"),
            "--drain-secs",
            "1",
        ],
        &[("AGENTD_LEASE_TTL_MS", "4000")],
    );
    let log = process.log_text();
    for warning in [
        "suspend_ttl_secs in [server] is deprecated: write suspend_ttl = \"2m\" instead",
        "--drain-secs is deprecated: write --drain-timeout 1s instead",
        "AGENTD_LEASE_TTL_MS is deprecated: write AGENTD_LEASE_TTL=4s instead",
    ] {
        assert_eq!(log.matches(warning).count(), 1, "{warning}\n{log}");
    }

    // The file's suspend_ttl_secs is the time to live of a suspension.
    let seconds_now = || {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock");
        i64::try_from(since.as_secs()).expect("seconds fit")
    };
    let before = seconds_now();
    let chunks = stream_prompt(&mut process.client().await, "pick a plan").await;
    let after = seconds_now();
    let expires_at = suspensions(&chunks)[0].expires_at.expect("expires_at");
    assert!(
        (before + 120..=after + 121).contains(&expires_at.seconds),
        "expires at {} s, suspended between {before} s and {after} s",
        expires_at.seconds
    );
}

/// The JSON line whose message is `message` and whose own `run_id` field
/// is `run`.
fn lifecycle_line<'a>(lines: &'a [Value], message: &str, run: &str) -> &'a Value {
    lines
        .iter()
        .find(|line| line["fields"]["message"] == message && line["fields"]["run_id"] == run)
        .unwrap_or_else(|| panic!("no {message:?} line for run {run} in:\n{lines:#?}"))
}

/// At INFO, a run's lifecycle is one JSON line per step: started,
/// suspended (with the tool and call), resumed, finished (with reason,
/// steps and duration), and, for a run nobody answers, expired; each
/// names the run, agent, tenant and thread in its own fields.
#[tokio::test]
async fn a_runs_lifecycle_is_logged_at_info_one_json_line_per_step() {
    let data = tempfile::tempdir().expect("temp dir");
    let config = write_file(
        data.path(),
        "agentd.toml",
        "[[agents]]\nid = \"assistant\"\ndefault = true\n\n\
         [[agents]]\nid = \"brief\"\nsuspend_ttl = \"300ms\"\n",
    );
    let process = ServerProcess::start_with(
        data.path(),
        &[
            "--log-format",
            "json",
            "--config",
            config.to_str().expect("a UTF-8 path"),
            "--sweep-interval",
            "100ms",
        ],
        &[],
    );
    let mut client = process.client().await;
    let start = pb::StreamAgentRequest {
        prompt: "Help me pick a plan".into(),
        thread_id: "plans-1".into(),
        ..Default::default()
    };
    let chunks = collect(client.stream_agent(start).await.unwrap().into_inner())
        .await
        .unwrap();
    let run = chunks[0].run_id.clone();
    let call = suspensions(&chunks)[0].tool_call_id.clone();
    let resume = pb::ResumeRequest {
        run_id: run.clone(),
        answer: Some(pb::resume_request::Answer::Text("Pro".into())),
        ..Default::default()
    };
    let done = collect(client.resume(resume).await.unwrap().into_inner())
        .await
        .unwrap();
    assert_eq!(finish_reason(&done), pb::FinishReason::Stop);

    let left = pb::StreamAgentRequest {
        agent_id: "brief".into(),
        prompt: "Help me pick a plan".into(),
        ..Default::default()
    };
    let unanswered = collect(client.stream_agent(left).await.unwrap().into_inner())
        .await
        .unwrap();
    let expiring = unanswered[0].run_id.clone();
    let (expired, lines) = wait_for_line(&process, |line| {
        line["fields"]["message"] == "run expired" && line["fields"]["run_id"] == expiring.as_str()
    })
    .await;

    for message in ["run started", "run suspended", "run resumed", "run finished"] {
        let line = lifecycle_line(&lines, message, &run);
        assert_eq!(line["level"], "INFO", "{line}");
        assert_eq!(line["fields"]["agent"], "assistant", "{line}");
        assert_eq!(line["fields"]["tenant"], "default", "{line}");
        assert_eq!(line["fields"]["thread_id"], "plans-1", "{line}");
    }
    let suspended = lifecycle_line(&lines, "run suspended", &run);
    assert_eq!(suspended["fields"]["tool"], "ask_user", "{suspended}");
    assert_eq!(suspended["fields"]["tool_call_id"], call.as_str(), "{suspended}");
    let resumed = lifecycle_line(&lines, "run resumed", &run);
    assert_eq!(resumed["fields"]["tool_call_id"], call.as_str(), "{resumed}");
    assert_eq!(resumed["fields"]["outcome"], "answered", "{resumed}");
    assert_eq!(resumed["fields"]["source"], "grpc", "{resumed}");
    let finished = lifecycle_line(&lines, "run finished", &run);
    assert_eq!(finished["fields"]["reason"], "stop", "{finished}");
    assert_eq!(finished["fields"]["steps"], 2, "{finished}");
    assert!(finished["fields"]["duration_ms"].is_u64(), "{finished}");

    assert_eq!(expired["level"], "INFO", "{expired}");
    assert_eq!(expired["fields"]["agent"], "brief", "{expired}");
    assert_eq!(expired["fields"]["tenant"], "default", "{expired}");
    assert!(
        expired["fields"].get("thread_id").is_none(),
        "no thread: {expired}"
    );
    assert!(
        expired["fields"]["suspended_ms"].as_u64() >= Some(300),
        "{expired}"
    );
    lifecycle_line(&lines, "run started", &expiring);
    lifecycle_line(&lines, "run suspended", &expiring);
}

/// A password for the store URLs below: it must appear in no log line.
const STORE_PASSWORD: &str = "never-log-this-s3cret";

/// `url` (`scheme://user@host...`) with `password` as its user's.
fn with_password(url: &str, password: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (user, host) = rest.split_once('@').expect("the test URL names a user");
    let user = user.split(':').next().unwrap_or(user);
    format!("{scheme}://{user}:{password}@{host}")
}

/// The start-up line names the store with its password hidden, and no
/// line holds the password (PostgreSQL's trust authentication never asks
/// for it, so the server starts).
#[tokio::test]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_store_password_is_never_logged() {
    let schema = crate::pg::TestSchema::create().await;
    let url = with_password(&schema.url(), STORE_PASSWORD);
    let data = tempfile::tempdir().expect("temp dir");
    let process = ServerProcess::start_with(data.path(), &["--store", &url, "--log-format", "json"], &[]);
    let (line, lines) = wait_for_line(&process, |line| {
        line["fields"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("agentd listening on"))
    })
    .await;
    let store = line["fields"]["store"].as_str().expect("the store is named");
    assert_eq!(store, with_password(&schema.url(), "***"));
    for line in lines {
        assert!(
            !line.to_string().contains(STORE_PASSWORD),
            "a line shows the password: {line}"
        );
    }
}

/// A store that cannot be reached is named without its password.
#[tokio::test]
async fn an_unreachable_store_is_named_without_its_password() {
    let url = format!("postgres://agentd:{STORE_PASSWORD}@127.0.0.1:1/agentd");
    let stderr = crate::startup::start_failing(&[], &["--listen", "127.0.0.1:0", "--store", &url], &[]).await;
    assert!(stderr.contains("127.0.0.1:1"), "the store is named: {stderr}");
    assert!(
        !stderr.contains(STORE_PASSWORD),
        "the password is shown: {stderr}"
    );
    // Nor in an URL the server cannot use at all.
    let url = format!("mysql://agentd:{STORE_PASSWORD}@127.0.0.1:1/agentd");
    let stderr = crate::startup::start_failing(&[], &["--listen", "127.0.0.1:0", "--store", &url], &[]).await;
    assert!(
        stderr.contains("unsupported store URL \"mysql://agentd:***@127.0.0.1:1/agentd\""),
        "{stderr}"
    );
}
