//! Deliveries from one server: every kind of run event, signed, in order
//! per run, the suspended run's question in its data; filters by event
//! type and agent; failed attempts retried with the same id; a delivery
//! whose schedule runs out failed for good, and the run's next event sent
//! after it; a configuration that cannot be used refused at start.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use agentd::pb;

use super::receiver::{Answer, Received, Receiver, SECRET};
use super::{metric, scrape, start_server, webhook_table, write_config, SECRET_VARIABLE};
use crate::helpers::finish_reason;
use crate::process::{stream_prompt, ServerProcess};

const ARRIVAL: Duration = Duration::from_secs(20);

/// The event types `received` on `path`, in order, for `run_id`.
fn types_of(received: &[Received], path: &str, run_id: &str) -> Vec<String> {
    received
        .iter()
        .filter(|r| r.path == path && r.run_id() == run_id)
        .map(Received::event_type)
        .collect()
}

/// Scrapes until `series` reaches `value` (the metrics count an attempt
/// once its outcome is stored, just after the receiver answered).
async fn wait_for_metric(server: &ServerProcess, series: &str, value: f64) -> String {
    let deadline = Instant::now() + ARRIVAL;
    loop {
        let text = scrape(server).await;
        if metric(&text, series) == Some(value) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{series} never reached {value}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn run_id_of(chunks: &[pb::AgentChunk]) -> String {
    chunks.first().expect("chunks").run_id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_signed_in_order_with_the_question() {
    let receiver = Receiver::start([]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &[
            webhook_table("all", &receiver.url("all"), ""),
            webhook_table(
                "questions",
                &receiver.url("questions"),
                "events = [\"run.suspended\"]\nagents = [\"assistant\"]",
            ),
        ],
    );
    let server = start_server(&config, &dir.path().join("data"), &[]);
    let mut client = server.client().await;

    let asked = stream_prompt(&mut client, "Help me pick a plan").await;
    assert_eq!(finish_reason(&asked), pb::FinishReason::Suspended);
    let asked_id = run_id_of(&asked);
    let answered = client
        .resume(pb::ResumeRequest {
            run_id: asked_id.clone(),
            answer: Some(pb::resume_request::Answer::Text("Pro".into())),
            ..Default::default()
        })
        .await
        .expect("Resume")
        .into_inner();
    let answered = crate::helpers::collect(answered).await.expect("the continuation");
    assert_eq!(finish_reason(&answered), pb::FinishReason::Stop);
    let plain = stream_prompt(&mut client, "plain, please").await;
    let plain_id = run_id_of(&plain);

    // Six events to "all", the suspension alone to "questions".
    let received = receiver.wait_for(7, ARRIVAL).await;
    assert_eq!(
        types_of(&received, "all", &asked_id),
        ["run.started", "run.suspended", "run.resumed", "run.completed"]
    );
    assert_eq!(
        types_of(&received, "all", &plain_id),
        ["run.started", "run.completed"]
    );
    assert_eq!(types_of(&received, "questions", &asked_id), ["run.suspended"]);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for request in &received {
        assert_eq!(request.verified, Ok(()), "{request:?}");
        assert_eq!(request.content_type, "application/json");
        let sent: i64 = request.timestamp.parse().expect("unix seconds");
        assert!((now - sent).abs() < 120, "{sent} vs {now}");
        let json = request.json();
        let rfc3339 = json["timestamp"].as_str().expect("a timestamp");
        assert!(rfc3339.ends_with('Z') && rfc3339.contains('T'), "{rfc3339}");
        assert_eq!(json["data"]["time"], json["timestamp"]);
    }
    let ids: BTreeSet<&str> = received
        .iter()
        .filter(|r| r.path == "all")
        .map(|r| r.id.as_str())
        .collect();
    assert_eq!(ids.len(), 6, "one id per event");

    // The suspension carries the question, and is the same message on
    // both webhooks.
    let suspended = received
        .iter()
        .find(|r| r.path == "questions")
        .expect("the suspension");
    let data = &suspended.json()["data"];
    assert_eq!(data["kind"], "RUN_EVENT_KIND_SUSPENDED");
    assert_eq!(data["status"], "RUN_STATUS_SUSPENDED");
    assert_eq!(data["agentId"], "assistant");
    let question = &data["pending"][0]["suspendPayload"]["askUser"];
    assert_eq!(question["question"], "Which plan should I set up for you?");
    assert_eq!(question["options"][1]["label"], "Pro");
    let same = received
        .iter()
        .find(|r| r.path == "all" && r.event_type() == "run.suspended")
        .expect("the suspension on all");
    assert_eq!(same.id, suspended.id);
    assert_eq!(same.body, suspended.body);

    // The resumption carries the decision it was made of.
    let resumed = received
        .iter()
        .find(|r| r.path == "all" && r.event_type() == "run.resumed")
        .expect("the resumption");
    let decisions = &resumed.json()["data"]["decisions"];
    assert_eq!(decisions.as_array().map(Vec::len), Some(1), "{decisions}");
    assert_eq!(decisions[0]["outcome"], "DECISION_OUTCOME_ANSWERED");
    assert_eq!(decisions[0]["source"], "DECISION_SOURCE_GRPC");
    assert_eq!(
        decisions[0]["toolCallId"], data["pending"][0]["toolCallId"],
        "the call the suspension waited on"
    );

    let text = wait_for_metric(
        &server,
        "agentd_webhook_deliveries_total{outcome=\"delivered\",webhook=\"all\"}",
        6.0,
    )
    .await;
    assert_eq!(
        metric(&text, "agentd_webhook_pending_deliveries{webhook=\"all\"}"),
        Some(0.0),
        "nothing pending"
    );
    assert!(
        text.contains("agentd_webhook_delivery_latency_seconds_count{webhook=\"all\"} 6"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_attempts_are_retried_with_the_same_id() {
    let receiver = Receiver::start([Answer::Status(500), Answer::Status(503)]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &[webhook_table("flaky", &receiver.url("flaky"), "")]);
    let server = start_server(&config, &dir.path().join("data"), &[]);
    let mut client = server.client().await;
    let run = stream_prompt(&mut client, "plain").await;
    let run_id = run_id_of(&run);

    let received = receiver.wait_for(4, ARRIVAL).await;
    let types: Vec<String> = received.iter().map(Received::event_type).collect();
    assert_eq!(
        types,
        ["run.started", "run.started", "run.started", "run.completed"],
        "the completion waits until the start is delivered"
    );
    assert!(received
        .iter()
        .all(|r| r.run_id() == run_id && r.verified.is_ok()));
    assert_eq!(received[0].id, received[1].id, "a retry keeps the id");
    assert_eq!(received[1].id, received[2].id);
    assert_eq!(received[0].body, received[2].body, "and the body");
    assert_ne!(received[3].id, received[0].id);

    let text = wait_for_metric(
        &server,
        "agentd_webhook_deliveries_total{outcome=\"delivered\",webhook=\"flaky\"}",
        2.0,
    )
    .await;
    assert_eq!(
        metric(
            &text,
            "agentd_webhook_attempts_total{result=\"status\",webhook=\"flaky\"}"
        ),
        Some(2.0)
    );
    assert_eq!(
        metric(
            &text,
            "agentd_webhook_attempts_total{result=\"success\",webhook=\"flaky\"}"
        ),
        Some(2.0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_whose_schedule_runs_out_fails_and_the_next_event_goes() {
    let receiver = Receiver::start(std::iter::repeat_n(Answer::Status(500), 10_000)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &[webhook_table(
            "down",
            &receiver.url("down"),
            "retry_for = \"300ms\"",
        )],
    );
    let server = start_server(&config, &dir.path().join("data"), &[]);
    let mut client = server.client().await;
    stream_prompt(&mut client, "plain").await;

    wait_for_metric(
        &server,
        "agentd_webhook_deliveries_total{outcome=\"failed\",webhook=\"down\"}",
        2.0,
    )
    .await;
    let types: Vec<String> = receiver.received().iter().map(Received::event_type).collect();
    let first_completion = types
        .iter()
        .position(|t| t == "run.completed")
        .expect("the completion was attempted");
    assert!(first_completion >= 2, "the start was retried first: {types:?}");
    assert!(
        types[first_completion..].iter().all(|t| t == "run.completed"),
        "every attempt at the start came before the completion: {types:?}"
    );
    let log = server.log_text();
    assert!(log.contains("webhook delivery failed for good"), "{log}");
}

/// Starts the binary with `table` as its only webhook and returns what it
/// printed: it must refuse to start.
fn refused_start(table: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(dir.path(), &[table.to_owned()]);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .env(SECRET_VARIABLE, SECRET)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run agentd");
    assert!(!output.status.success(), "agentd started with {table}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_webhook_that_cannot_be_used_stops_the_start() {
    let cases = [
        (
            webhook_table("x", "http://127.0.0.1:9/x", "")
                .replace(&format!("${{{SECRET_VARIABLE}}}"), "whsec_c2hvcnQ="),
            "webhooks[0]: secret: the secret is 5 bytes once decoded",
        ),
        (
            webhook_table("x", "http://127.0.0.1:9/x", "")
                .replace(&format!("${{{SECRET_VARIABLE}}}"), "hunter2"),
            "webhooks[0]: secret: a Standard Webhooks secret starts with whsec_",
        ),
        (
            webhook_table("x", "http://127.0.0.1:9/x", "events = [\"run.finished\"]"),
            "webhooks[0]: events: \"run.finished\" is not an event type",
        ),
        (
            webhook_table("x", "file:///etc/passwd", ""),
            "webhooks[0]: url: a file: URL; webhooks are sent to http:// or https:// URLs",
        ),
    ];
    for (table, expected) in cases {
        let stderr = refused_start(&table);
        assert!(stderr.contains(expected), "{table}\n{stderr}");
        assert!(
            !stderr.contains("MfKQ9r8"),
            "the secret is never printed:\n{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_endpoint_fails_without_its_url_in_the_log() {
    // Nothing listens on a port just bound and released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("http://127.0.0.1:{port}/hook?token=sekrit-token");
    let config = write_config(dir.path(), &[webhook_table("gone", &url, "retry_for = \"0s\"")]);
    let server = start_server(&config, &dir.path().join("data"), &[]);
    let mut client = server.client().await;
    stream_prompt(&mut client, "plain").await;
    let text = wait_for_metric(
        &server,
        "agentd_webhook_deliveries_total{outcome=\"failed\",webhook=\"gone\"}",
        2.0,
    )
    .await;
    assert_eq!(
        metric(
            &text,
            "agentd_webhook_attempts_total{result=\"connection\",webhook=\"gone\"}"
        ),
        Some(2.0),
        "one attempt each: retry_for is 0s"
    );
    let log = server.log_text();
    assert!(log.contains("webhook delivery failed for good"), "{log}");
    assert!(!log.contains("sekrit-token"), "{log}");
}
