//! A local HTTP server for the HTTP tool tests, on `127.0.0.1:0`: it counts
//! the requests of every route and records what arrived, so tests can prove
//! what agentd sent (or that it sent nothing).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use tokio::net::TcpListener;

/// What one request brought.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub body: String,
    pub query: Option<String>,
    pub authorization: Option<String>,
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

#[derive(Default)]
struct Log {
    requests: HashMap<&'static str, Vec<Received>>,
}

/// The running server; it stops when dropped.
pub(crate) struct HttpServer {
    pub addr: SocketAddr,
    log: Arc<Mutex<Log>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Size of the `/big` body.
pub(crate) const BIG_BODY_BYTES: usize = 5_000;

type Shared = Arc<Mutex<Log>>;

fn record(
    log: &Shared,
    route: &'static str,
    headers: &HeaderMap,
    query: Option<String>,
    body: Bytes,
) -> usize {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let received = Received {
        body: String::from_utf8_lossy(&body).into_owned(),
        query,
        authorization: header("authorization"),
        traceparent: header("traceparent"),
        tracestate: header("tracestate"),
    };
    let mut log = log.lock().unwrap();
    let requests = log.requests.entry(route).or_default();
    requests.push(received);
    requests.len()
}

impl HttpServer {
    pub(crate) async fn start() -> Self {
        let log: Shared = Arc::default();
        let app = Router::new()
            .route(
                "/weather",
                post(
                    |State(log): State<Shared>, headers: HeaderMap, body: Bytes| async move {
                        record(&log, "weather", &headers, None, body.clone());
                        let city = String::from_utf8_lossy(&body).into_owned();
                        (
                            StatusCode::OK,
                            format!("{{\"forecast\":\"sunny\",\"request\":{city}}}"),
                        )
                    },
                ),
            )
            .route(
                "/search",
                get(
                    |State(log): State<Shared>, headers: HeaderMap, RawQuery(query): RawQuery| async move {
                        record(&log, "search", &headers, query.clone(), Bytes::new());
                        (
                            StatusCode::OK,
                            format!("results for {}", query.unwrap_or_default()),
                        )
                    },
                ),
            )
            .route(
                "/broken",
                post(
                    |State(log): State<Shared>, headers: HeaderMap, body: Bytes| async move {
                        record(&log, "broken", &headers, None, body);
                        (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded\n")
                    },
                ),
            )
            .route(
                "/slow",
                post(
                    |State(log): State<Shared>, headers: HeaderMap, body: Bytes| async move {
                        record(&log, "slow", &headers, None, body);
                        tokio::time::sleep(Duration::from_secs(10)).await;
                        (StatusCode::OK, "too late")
                    },
                ),
            )
            .route(
                "/big",
                post(
                    |State(log): State<Shared>, headers: HeaderMap, body: Bytes| async move {
                        record(&log, "big", &headers, None, body);
                        (StatusCode::OK, "é".repeat(BIG_BODY_BYTES / 2))
                    },
                ),
            )
            .route(
                "/flaky",
                post(
                    |State(log): State<Shared>, headers: HeaderMap, body: Bytes| async move {
                        match record(&log, "flaky", &headers, None, body) {
                            1 => (StatusCode::SERVICE_UNAVAILABLE, "try again"),
                            _ => (StatusCode::OK, "recovered"),
                        }
                    },
                ),
            )
            .with_state(Arc::clone(&log));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("http test server");
        });
        Self { addr, log, task }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The requests `route` received, in order.
    pub(crate) fn received(&self, route: &'static str) -> Vec<Received> {
        self.log
            .lock()
            .unwrap()
            .requests
            .get(route)
            .cloned()
            .unwrap_or_default()
    }
}
