//! Webhooks from two replicas on one PostgreSQL store, both configured
//! with the same webhook: runs started on either, every event delivered,
//! each exactly once (both enqueue and claim; the cursor's
//! compare-and-set and the claims' row locks leave each event and each
//! attempt to one of them).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::pg::TestSchema;
use crate::process::{stream_prompt, ServerProcess};
use crate::webhooks::receiver::{Receiver, SECRET};
use crate::webhooks::{metric, scrape, webhook_table, write_config, SECRET_VARIABLE};

/// Runs started, alternately on each replica: two events each.
const RUNS: usize = 12;

fn replica(name: &str, store: &str, config: &std::path::Path, data_dir: &std::path::Path) -> ServerProcess {
    let config = config.to_str().expect("a UTF-8 path");
    ServerProcess::start_labelled(
        Some(name),
        data_dir,
        &[
            "--store",
            store,
            "--replica-id",
            name,
            "--config",
            config,
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        &[(SECRET_VARIABLE, SECRET)],
    )
}

/// Deliveries recorded as delivered by `replica`.
async fn delivered(replica: &ServerProcess) -> f64 {
    let text = scrape(replica).await;
    metric(
        &text,
        "agentd_webhook_deliveries_total{outcome=\"delivered\",webhook=\"shared\"}",
    )
    .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn two_replicas_deliver_every_event_exactly_once() {
    let schema = TestSchema::create().await;
    let receiver = Receiver::start([]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_config(
        dir.path(),
        &[webhook_table("shared", &receiver.url("shared"), "")],
    );
    let url = schema.url();
    let a = replica("replica-a", &url, &config, &dir.path().join("a"));
    let b = replica("replica-b", &url, &config, &dir.path().join("b"));
    let (mut on_a, mut on_b) = (a.client().await, b.client().await);

    let mut runs = Vec::new();
    for i in 0..RUNS {
        let client = if i % 2 == 0 { &mut on_a } else { &mut on_b };
        let chunks = stream_prompt(client, "plain").await;
        runs.push(chunks[0].run_id.clone());
    }

    let received = receiver.wait_for(2 * RUNS, Duration::from_secs(30)).await;
    // Every attempt's outcome recorded, by one replica or the other: no
    // attempt is left that could repeat a message.
    let deadline = Instant::now() + Duration::from_secs(20);
    while delivered(&a).await + delivered(&b).await < (2 * RUNS) as f64 {
        assert!(
            Instant::now() < deadline,
            "the deliveries were never all recorded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let received_now = receiver.received();
    assert_eq!(received_now.len(), received.len(), "no message came twice");
    let mut by_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for request in &received_now {
        assert_eq!(request.verified, Ok(()), "{request:?}");
        by_id
            .entry(request.id.clone())
            .or_default()
            .push(request.event_type());
    }
    assert_eq!(by_id.len(), 2 * RUNS, "one distinct id per event: {by_id:?}");
    assert!(by_id.values().all(|types| types.len() == 1), "{by_id:?}");
    for run in &runs {
        let types: Vec<String> = received_now
            .iter()
            .filter(|r| r.run_id() == *run)
            .map(|r| r.event_type())
            .collect();
        assert_eq!(types, ["run.started", "run.completed"], "run {run}");
    }
    let pending = metric(
        &scrape(&a).await,
        "agentd_webhook_pending_deliveries{webhook=\"shared\"}",
    );
    assert_eq!(pending, Some(0.0), "nothing pending");
}
