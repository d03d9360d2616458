//! The Prometheus endpoint: after an ask_user cycle (a rejected answer, an
//! accepted one), a plain run, a cancelled suspension and a run left
//! suspended, a scrape over HTTP shows exactly those counts; the
//! suspended-runs gauge is right again after a restart on the same store.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use agentd::pb;
use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tonic::Code;

use crate::helpers::{collect, expect_code, run_id, settings_in};

/// A server with a metrics endpoint, both on ephemeral ports.
struct Metered {
    client: AgentServiceClient<tonic::transport::Channel>,
    metrics: SocketAddr,
    _stop: oneshot::Sender<()>,
}

async fn start(data_dir: &Path) -> Metered {
    let runtime = server::build_runtime(&settings_in(data_dir))
        .await
        .expect("runtime");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let metrics_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let metrics = metrics_listener.local_addr().expect("addr");
    let (stop, stopped) = oneshot::channel::<()>();
    let stopped = async {
        let _ = stopped.await;
    };
    let (stop_metrics, metrics_stopped) = tokio::sync::watch::channel(());
    tokio::spawn(server::metrics_endpoint::serve_http(
        metrics_listener,
        runtime.clone(),
        async move {
            let mut stopped = metrics_stopped;
            let _ = stopped.changed().await;
        },
    ));
    tokio::spawn(async move {
        server::serve(listener, runtime, stopped).await.expect("serve");
        drop(stop_metrics);
    });
    let client = AgentServiceClient::connect(format!("http://{addr}"))
        .await
        .expect("connect");
    Metered {
        client,
        metrics,
        _stop: stop,
    }
}

/// One HTTP request to the metrics endpoint: (status line, headers, body).
async fn get(addr: SocketAddr, path: &str) -> (String, String, String) {
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    socket.write_all(request.as_bytes()).await.expect("send");
    let mut response = String::new();
    socket.read_to_string(&mut response).await.expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_owned(), headers.to_owned(), body.to_owned())
}

async fn scrape(addr: SocketAddr) -> String {
    let (status, headers, body) = get(addr, "/metrics").await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(
        headers.contains("Content-Type: text/plain; version=0.0.4"),
        "{headers}"
    );
    body
}

/// The value of one series (`name{labels}`), if the scrape has it.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a number"))
}

fn assert_series(text: &str, series: &str, expected: f64) {
    assert_eq!(value(text, series), Some(expected), "{series} in:\n{text}");
}

async fn start_run(client: &mut AgentServiceClient<tonic::transport::Channel>, prompt: &str) -> String {
    let request = pb::StreamAgentRequest {
        prompt: prompt.into(),
        ..Default::default()
    };
    let chunks = collect(client.stream_agent(request).await.expect("start").into_inner())
        .await
        .expect("stream");
    run_id(&chunks)
}

async fn resume(
    client: &mut AgentServiceClient<tonic::transport::Channel>,
    run_id: &str,
    text: &str,
) -> Result<(), tonic::Status> {
    let request = pb::ResumeRequest {
        run_id: run_id.into(),
        answer: Some(pb::resume_request::Answer::Text(text.into())),
        ..Default::default()
    };
    collect(client.resume(request).await?.into_inner())
        .await
        .map(|_| ())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scrape_after_a_cycle_counts_what_happened() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut server = start(temp.path()).await;
    let client = &mut server.client;

    let plan = start_run(client, "Help me pick a plan").await;
    expect_code(resume(client, &plan, "Gold").await, Code::InvalidArgument);
    resume(client, &plan, "Pro").await.expect("Resume");
    expect_code(resume(client, &plan, "Pro").await, Code::FailedPrecondition);
    start_run(client, "plain hello").await;
    let pizza = start_run(client, "Order me a pizza, multi toppings").await;
    client
        .cancel_run(pb::CancelRunRequest {
            run_id: pizza,
            reason: "changed my mind".into(),
        })
        .await
        .expect("CancelRun");
    start_run(client, "free text please").await;

    // A stream counts as open until the server drops it, a moment after
    // the client read its end.
    let mut text = scrape(server.metrics).await;
    for _ in 0..100 {
        let open = value(&text, "agentd_active_streams{rpc=\"stream_agent\"}").unwrap_or(0.0)
            + value(&text, "agentd_active_streams{rpc=\"resume\"}").unwrap_or(0.0);
        if open == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = scrape(server.metrics).await;
    }
    let agent = "{agent=\"assistant\"}";
    assert_series(&text, &format!("agentd_runs_started_total{agent}"), 4.0);
    assert_series(&text, &format!("agentd_runs_suspended_total{agent}"), 3.0);
    assert_series(&text, &format!("agentd_runs_resumed_total{agent}"), 1.0);
    assert_series(&text, &format!("agentd_runs_completed_total{agent}"), 2.0);
    assert_series(&text, &format!("agentd_runs_cancelled_total{agent}"), 1.0);
    assert_series(&text, &format!("agentd_runs_failed_total{agent}"), 0.0);
    assert_series(
        &text,
        "agentd_resume_rejections_total{reason=\"invalid_answer\"}",
        1.0,
    );
    assert_series(
        &text,
        "agentd_resume_rejections_total{reason=\"not_suspended\"}",
        1.0,
    );
    assert_series(&text, &format!("agentd_suspended_runs{agent}"), 1.0);
    assert_series(&text, "agentd_active_streams{rpc=\"stream_agent\"}", 0.0);
    assert_series(&text, "agentd_active_streams{rpc=\"resume\"}", 0.0);
    // Histograms: one observation per stream, step, store write, suspension.
    assert_series(
        &text,
        "agentd_time_to_first_chunk_seconds_count{rpc=\"stream_agent\"}",
        4.0,
    );
    assert_series(
        &text,
        "agentd_time_to_first_chunk_seconds_count{rpc=\"resume\"}",
        1.0,
    );
    assert_series(
        &text,
        &format!("agentd_model_step_duration_seconds_count{agent}"),
        5.0,
    );
    assert_series(
        &text,
        &format!("agentd_suspension_duration_seconds_count{agent}"),
        2.0,
    );
    assert_series(
        &text,
        "agentd_store_operation_duration_seconds_count{operation=\"create_run\"}",
        4.0,
    );
    assert!(
        value(
            &text,
            "agentd_store_operation_duration_seconds_count{operation=\"commit\"}"
        )
        // A new run is created by the write of its first step and, with
        // this embedded store, a Resume's claim is stored by the first
        // write of its continuation, so the commits are the finish of the
        // plan run and the cancel of the pizza run, plus any step
        // committed apart.
        .is_some_and(|commits| commits >= 2.0),
        "{text}"
    );

    let (status, _, _) = get(server.metrics, "/nothing-here").await;
    assert_eq!(status, "HTTP/1.1 404 Not Found");

    // A new server on the same store counts the suspended run it left.
    drop(server);
    let restarted = start(temp.path()).await;
    let text = scrape(restarted.metrics).await;
    assert_series(&text, &format!("agentd_suspended_runs{agent}"), 1.0);
    assert_series(&text, &format!("agentd_runs_started_total{agent}"), 0.0);
}
