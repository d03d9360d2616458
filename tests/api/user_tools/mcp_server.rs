//! MCP servers for the tests: the example server's tools served over
//! streamable HTTP in this process (on `127.0.0.1:0`, and again on the same
//! port after it was stopped), and the path of the example server built as
//! its own program, for stdio.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[path = "../../../examples/mcp_echo_server/echo.rs"]
mod echo;

pub(crate) use echo::EchoServer;

/// The example MCP server program (`examples/mcp_echo_server`), which
/// `cargo test` builds next to the test binary.
pub(crate) fn stdio_server_program() -> PathBuf {
    let test_binary = std::env::current_exe().expect("the test binary's path");
    let profile_dir = test_binary
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let program = profile_dir
        .join("examples")
        .join(format!("mcp_echo_server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        program.exists(),
        "{} is missing: `cargo test` builds it (or `cargo build --example mcp_echo_server`)",
        program.display()
    );
    program
}

/// The example tools served over streamable HTTP at `/mcp`.
pub(crate) struct McpHttpServer {
    pub addr: SocketAddr,
    /// Tool calls served, over every restart.
    pub calls: Arc<AtomicUsize>,
    /// The POSTs received since this start, with their JSON-RPC bodies.
    posts: Posts,
    stop: CancellationToken,
    /// Taken by `kill`, which waits for it.
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl McpHttpServer {
    pub(crate) async fn start() -> Self {
        Self::start_on("127.0.0.1:0".parse().expect("address"), Arc::default()).await
    }

    async fn start_on(addr: SocketAddr, calls: Arc<AtomicUsize>) -> Self {
        let stop = CancellationToken::new();
        let handler = EchoServer {
            calls: Arc::clone(&calls),
            can_exit: false,
        };
        let service: StreamableHttpService<EchoServer, LocalSessionManager> = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Default::default(),
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_cancellation_token(stop.child_token()),
        );
        let posts = Posts::default();
        let app =
            axum::Router::new()
                .nest_service("/mcp", service)
                .layer(axum::middleware::from_fn_with_state(
                    Arc::clone(&posts),
                    record_post,
                ));
        let listener = TcpListener::bind(addr).await.expect("bind the MCP server");
        let addr = listener.local_addr().expect("address");
        let shutdown = stop.clone();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
                .await;
        });
        Self {
            addr,
            calls,
            posts,
            stop,
            task: Some(task),
        }
    }

    /// The headers of the POSTs whose JSON-RPC method is `method`, with
    /// their bodies.
    pub(crate) fn posts_of(&self, method: &str) -> Vec<(HeaderMap, serde_json::Value)> {
        let posts = self.posts.lock().unwrap();
        posts
            .iter()
            .filter(|(_, body)| body["method"] == method)
            .cloned()
            .collect()
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Stops serving and waits until the port is closed.
    pub(crate) async fn kill(mut self) -> (SocketAddr, Arc<AtomicUsize>) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        (self.addr, Arc::clone(&self.calls))
    }

    /// Serves again on the port a killed server used.
    pub(crate) async fn restart((addr, calls): (SocketAddr, Arc<AtomicUsize>)) -> Self {
        Self::start_on(addr, calls).await
    }
}

type Posts = Arc<Mutex<Vec<(HeaderMap, serde_json::Value)>>>;

/// Records a POST's headers and body, then serves it.
async fn record_post(State(posts): State<Posts>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let json = serde_json::from_slice(&bytes).unwrap_or_default();
    posts.lock().unwrap().push((parts.headers.clone(), json));
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Counts that nothing happened.
pub(crate) fn assert_no_calls(server: &McpHttpServer) {
    assert_eq!(server.calls(), 0, "the MCP server was called");
}
