//! The Prometheus endpoint: right after start-up every series with known
//! labels is there at zero (runs by agent, gRPC methods, process metrics);
//! after an ask_user cycle (a rejected answer, an accepted one), a plain
//! run, a cancelled suspension and a run left suspended, a scrape shows
//! exactly those counts, the gRPC calls by method and code among them; the
//! suspended-runs gauge is right again after a restart on the same store.
//! The endpoint speaks HTTP/1.1 with keep-alive and negotiates OpenMetrics.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use agentd::pb;
use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::server;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tonic::Code;

use crate::helpers::{collect, expect_code, run_id, settings_in};

/// A server with a metrics endpoint, both on ephemeral ports.
pub(crate) struct Metered {
    pub(crate) client: AgentServiceClient<tonic::transport::Channel>,
    /// The server's port.
    pub(crate) addr: SocketAddr,
    pub(crate) metrics: SocketAddr,
    _stop: oneshot::Sender<()>,
}

pub(crate) async fn start(data_dir: &Path) -> Metered {
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
        addr,
        metrics,
        _stop: stop,
    }
}

/// An HTTP response: status line, headers (names in lower case), body.
struct Reply {
    status: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// One HTTP/1.1 connection to the metrics endpoint, kept open across
/// requests.
struct Connection {
    socket: BufReader<TcpStream>,
    addr: SocketAddr,
}

impl Connection {
    async fn open(addr: SocketAddr) -> Self {
        let socket = TcpStream::connect(addr).await.expect("connect");
        Self {
            socket: BufReader::new(socket),
            addr,
        }
    }

    /// Sends `method path` with `headers` (`Name: value` lines) and reads
    /// the response, its body by its Content-Length.
    async fn request(&mut self, method: &str, path: &str, headers: &str) -> Reply {
        let request = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n{headers}\r\n", self.addr);
        self.socket
            .get_mut()
            .write_all(request.as_bytes())
            .await
            .expect("send");
        let mut status = String::new();
        self.socket.read_line(&mut status).await.expect("status line");
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            self.socket.read_line(&mut line).await.expect("header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header");
            headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
        }
        let mut reply = Reply {
            status: status.trim_end().to_owned(),
            headers,
            body: String::new(),
        };
        if method != "HEAD" {
            let length: usize = reply
                .header("content-length")
                .expect("a Content-Length")
                .parse()
                .expect("a length");
            let mut body = vec![0; length];
            self.socket.read_exact(&mut body).await.expect("body");
            reply.body = String::from_utf8(body).expect("UTF-8");
        }
        reply
    }
}

async fn get(addr: SocketAddr, path: &str) -> Reply {
    Connection::open(addr).await.request("GET", path, "").await
}

pub(crate) async fn scrape(addr: SocketAddr) -> String {
    let reply = get(addr, "/metrics").await;
    assert_eq!(reply.status, "HTTP/1.1 200 OK");
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    reply.body
}

/// The value of one series (`name{labels}`), if the scrape has it.
pub(crate) fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.parse().expect("a number"))
}

pub(crate) fn assert_series(text: &str, series: &str, expected: f64) {
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

/// The series of `method` of agentd.v1.AgentService with `code`.
fn handled(method: &str, kind: &str, code: &str) -> String {
    format!(
        "grpc_server_handled_total{{grpc_code=\"{code}\",grpc_method=\"{method}\",\
         grpc_service=\"agentd.v1.AgentService\",grpc_type=\"{kind}\"}}"
    )
}

/// A family of `method` of agentd.v1.AgentService, e.g. `grpc_server_started_total`.
fn of_method(family: &str, method: &str, kind: &str) -> String {
    format!(
        "{family}{{grpc_method=\"{method}\",grpc_service=\"agentd.v1.AgentService\",grpc_type=\"{kind}\"}}"
    )
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
    let unknown = uuid::Uuid::now_v7().to_string();
    expect_code(resume(client, &unknown, "Pro").await, Code::NotFound);

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

    // The gRPC calls, by method and code; a stream's code is its
    // trailers', its handling time runs to its end.
    assert_series(&text, &handled("StreamAgent", "server_stream", "OK"), 4.0);
    assert_series(&text, &handled("Resume", "server_stream", "OK"), 1.0);
    assert_series(&text, &handled("Resume", "server_stream", "InvalidArgument"), 1.0);
    assert_series(
        &text,
        &handled("Resume", "server_stream", "FailedPrecondition"),
        1.0,
    );
    assert_series(&text, &handled("Resume", "server_stream", "NotFound"), 1.0);
    assert_series(&text, &handled("CancelRun", "unary", "OK"), 1.0);
    assert_series(&text, &handled("GetRun", "unary", "OK"), 0.0);
    assert_series(
        &text,
        &of_method("grpc_server_started_total", "Resume", "server_stream"),
        4.0,
    );
    assert_series(
        &text,
        &of_method(
            "grpc_server_handling_seconds_count",
            "StreamAgent",
            "server_stream",
        ),
        4.0,
    );
    assert_series(
        &text,
        &of_method("grpc_server_handling_seconds_count", "Resume", "server_stream"),
        4.0,
    );
    assert_series(
        &text,
        &of_method("grpc_server_msg_received_total", "Resume", "server_stream"),
        4.0,
    );
    assert_series(
        &text,
        &of_method("grpc_server_msg_sent_total", "CancelRun", "unary"),
        1.0,
    );
    let chunks_sent = value(
        &text,
        &of_method("grpc_server_msg_sent_total", "StreamAgent", "server_stream"),
    );
    assert!(chunks_sent.is_some_and(|sent| sent >= 4.0 * 3.0), "{text}");

    // A new server on the same store counts the suspended run it left.
    drop(server);
    let restarted = start(temp.path()).await;
    let text = scrape(restarted.metrics).await;
    assert_series(&text, &format!("agentd_suspended_runs{agent}"), 1.0);
    assert_series(&text, &format!("agentd_runs_started_total{agent}"), 0.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ask_user_cycle_is_two_writes_and_no_read() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut server = start(temp.path()).await;
    let before = scrape(server.metrics).await;
    let operations = |text: &str, name: &str| {
        value(
            text,
            &format!("agentd_store_operation_duration_seconds_count{{operation=\"{name}\"}}"),
        )
        .unwrap_or(0.0)
    };
    let run_id = start_run(&mut server.client, "Help me pick a plan").await;
    resume(&mut server.client, &run_id, "Pro").await.expect("Resume");
    let after = scrape(server.metrics).await;
    let done = |name: &str| operations(&after, name) - operations(&before, name);
    // The start is written once, at its suspension; the Resume's claim,
    // answer and continuation once, with its finish. No chunk is appended
    // apart, and the Resume starts from the record this process suspended
    // rather than read it back.
    assert_eq!(done("create_run"), 1.0, "{after}");
    assert_eq!(done("commit"), 1.0, "{after}");
    assert_eq!(done("append_events"), 0.0, "{after}");
    assert_eq!(done("load_run"), 0.0, "{after}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scrape_right_after_start_up_shows_every_known_series_at_zero() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut server = start(temp.path()).await;
    // Once a call is answered, the server serves.
    server
        .client
        .list_agents(pb::ListAgentsRequest::default())
        .await
        .expect("ListAgents");

    let text = scrape(server.metrics).await;
    let agent = "{agent=\"assistant\"}";
    assert_series(&text, &format!("agentd_suspended_runs{agent}"), 0.0);
    for family in [
        "started",
        "suspended",
        "resumed",
        "completed",
        "failed",
        "cancelled",
        "expired",
    ] {
        assert_series(&text, &format!("agentd_runs_{family}_total{agent}"), 0.0);
    }
    assert_series(
        &text,
        "agentd_resume_rejections_total{reason=\"invalid_answer\"}",
        0.0,
    );
    assert_series(&text, "agentd_active_streams{rpc=\"watch_runs\"}", 0.0);
    assert_series(
        &text,
        &format!("agentd_suspension_duration_seconds_count{agent}"),
        0.0,
    );
    assert_series(&text, &handled("ListAgents", "unary", "OK"), 1.0);
    assert_series(&text, &handled("GetRun", "unary", "OK"), 0.0);
    assert_series(&text, &handled("GetRun", "unary", "NotFound"), 0.0);
    assert_series(&text, &handled("WatchRuns", "server_stream", "OK"), 0.0);
    assert_series(
        &text,
        &of_method(
            "grpc_server_handling_seconds_count",
            "StreamAgent",
            "server_stream",
        ),
        0.0,
    );
    // Every service on the port, not only agentd's.
    for service in [
        "grpc.health.v1.Health",
        "lf.a2a.v1.A2AService",
        "grpc.reflection.v1.ServerReflection",
    ] {
        assert!(
            text.contains(&format!("grpc_service=\"{service}\"")),
            "{service} in:\n{text}"
        );
    }
    assert!(text.contains("grpc_method=\"Check\",grpc_service=\"grpc.health.v1.Health\",grpc_type=\"unary\""));
    for family in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
    ] {
        assert!(
            value(&text, family).is_some_and(|value| value >= 0.0),
            "{family} in:\n{text}"
        );
    }
    assert!(value(&text, "process_resident_memory_bytes").is_some_and(|bytes| bytes > 0.0));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_endpoint_keeps_connections_open_and_negotiates_openmetrics() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut server = start(temp.path()).await;
    // Once a call is answered, the server serves (its methods are measured).
    server
        .client
        .list_agents(pb::ListAgentsRequest::default())
        .await
        .expect("ListAgents");
    let mut connection = Connection::open(server.metrics).await;

    let text = connection.request("GET", "/metrics", "").await;
    assert_eq!(text.status, "HTTP/1.1 200 OK");
    assert_eq!(
        text.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(!text.body.contains("# EOF"));

    // What Prometheus asks for, on the same connection.
    let accept = "Accept: application/openmetrics-text;version=1.0.0;q=0.5,\
                  application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2\r\n";
    let open = connection.request("GET", "/metrics", accept).await;
    assert_eq!(open.status, "HTTP/1.1 200 OK");
    assert_eq!(
        open.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(open.body.ends_with("\n# EOF\n"), "{}", open.body);
    assert!(
        open.body.contains("\n# TYPE agentd_runs_started counter\n"),
        "{}",
        open.body
    );
    assert!(
        open.body
            .contains("\nagentd_runs_started_total{agent=\"assistant\"} 0"),
        "{}",
        open.body
    );
    assert!(
        open.body.contains("\n# TYPE grpc_server_handled counter\n"),
        "{}",
        open.body
    );
    assert!(
        !open.body.contains("# TYPE agentd_runs_started_total"),
        "{}",
        open.body
    );

    let head = connection.request("HEAD", "/metrics", "").await;
    assert_eq!(head.status, "HTTP/1.1 200 OK");
    let post = connection
        .request("POST", "/metrics", "Content-Length: 0\r\n")
        .await;
    assert_eq!(post.status, "HTTP/1.1 405 Method Not Allowed");
    let allowed = post.header("allow").expect("an Allow header");
    assert!(allowed.contains("GET") && allowed.contains("HEAD"), "{allowed}");
    let missing = connection.request("GET", "/nothing-here", "").await;
    assert_eq!(missing.status, "HTTP/1.1 404 Not Found");
    assert_eq!(
        connection.request("GET", "/", "").await.status,
        "HTTP/1.1 404 Not Found"
    );
    // Still the same connection.
    let again = connection.request("GET", "/metrics", "").await;
    assert_eq!(again.status, "HTTP/1.1 200 OK");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_the_client_leaves_counts_as_canceled() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut server = start(temp.path()).await;
    let client = &mut server.client;
    let request = pb::StreamAgentRequest {
        prompt: "Help me pick a plan".into(),
        ..Default::default()
    };
    let chunks = collect(client.stream_agent(request).await.expect("start").into_inner())
        .await
        .expect("stream");
    let last = chunks.last().expect("chunks").seq;
    // Nothing to replay on a suspended run: the stream waits for a Resume.
    let waiting = client
        .subscribe_run(pb::SubscribeRunRequest {
            run_id: run_id(&chunks),
            after_seq: last,
        })
        .await
        .expect("SubscribeRun")
        .into_inner();
    drop(waiting);

    // The server drops the stream a moment after the client reset it.
    let canceled = handled("SubscribeRun", "server_stream", "Canceled");
    let mut text = scrape(server.metrics).await;
    for _ in 0..100 {
        if value(&text, &canceled) == Some(1.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = scrape(server.metrics).await;
    }
    assert_series(&text, &canceled, 1.0);
    assert_series(&text, &handled("SubscribeRun", "server_stream", "OK"), 0.0);
    assert_series(
        &text,
        &of_method(
            "grpc_server_handling_seconds_count",
            "SubscribeRun",
            "server_stream",
        ),
        1.0,
    );
}
