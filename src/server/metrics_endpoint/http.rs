//! The metrics endpoint: a minimal HTTP/1.1 server on its own listener that
//! answers `GET /metrics` with the Prometheus text format. One request per
//! connection (`Connection: close`), bounded in size and time; it reads
//! nothing but the request head, and only reads from the runtime.

use std::future::Future;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::runtime::Runtime;

/// The largest request head read; a longer one is refused.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client gets to send its request and read the answer.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serves the metrics of `runtime` on `listener` until `shutdown` resolves.
pub async fn serve_http(
    listener: TcpListener,
    runtime: Runtime,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (socket, peer) = tokio::select! {
            () = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A connection that failed before it was accepted (reset,
                // out of descriptors) must not stop the endpoint.
                Err(error) => {
                    tracing::warn!(%error, "metrics endpoint: accept failed");
                    continue;
                }
            },
        };
        let runtime = runtime.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(CONNECTION_TIMEOUT, answer(socket, &runtime)).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::debug!(%peer, %error, "metrics request failed"),
                Err(_) => tracing::debug!(%peer, "metrics request timed out"),
            }
        });
    }
}

/// A response: status line, content type, body.
struct Reply {
    status: &'static str,
    content_type: &'static str,
    body: String,
}

impl Reply {
    fn text(status: &'static str, body: &str) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{body}\n"),
        }
    }
}

async fn answer(mut socket: TcpStream, runtime: &Runtime) -> std::io::Result<()> {
    let head = match read_head(&mut socket).await? {
        Some(head) => head,
        None => return Ok(()),
    };
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let reply = match (method, path) {
        ("GET" | "HEAD", "/metrics") => match super::scrape(runtime, crate::metrics::Format::Prometheus).await {
            Ok(body) => Reply {
                status: "200 OK",
                content_type: TEXT_FORMAT,
                body,
            },
            Err(error) => Reply::text("500 Internal Server Error", &error.to_string()),
        },
        ("GET" | "HEAD", "/") => Reply::text("200 OK", "agentd: metrics at /metrics"),
        ("GET" | "HEAD", _) => Reply::text("404 Not Found", "not found: metrics are at /metrics"),
        ("", _) => Reply::text("400 Bad Request", "bad request"),
        _ => Reply::text("405 Method Not Allowed", "only GET and HEAD are served"),
    };
    let mut response = format!(
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    );
    if reply.status.starts_with("405") {
        response.push_str("Allow: GET, HEAD\r\n");
    }
    response.push_str("\r\n");
    if method != "HEAD" {
        response.push_str(&reply.body);
    }
    socket.write_all(response.as_bytes()).await?;
    socket.shutdown().await
}

/// Reads up to the end of the request head; `None` if the client closed
/// first. A head longer than `MAX_HEAD` is cut there (only the request line
/// matters).
async fn read_head(socket: &mut TcpStream) -> std::io::Result<Option<String>> {
    let mut head = Vec::with_capacity(1024);
    let mut buffer = [0u8; 1024];
    loop {
        let read = socket.read(&mut buffer).await?;
        if read == 0 {
            return Ok((!head.is_empty()).then(|| String::from_utf8_lossy(&head).into_owned()));
        }
        head.extend_from_slice(&buffer[..read]);
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.len() >= MAX_HEAD {
            return Ok(Some(String::from_utf8_lossy(&head).into_owned()));
        }
    }
}
