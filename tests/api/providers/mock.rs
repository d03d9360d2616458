//! A model provider on 127.0.0.1:0 that answers from a queue of replies
//! (recorded-style SSE transcripts, error bodies, stalls) and records every
//! request it receives: path, headers, JSON body and when it came.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::Router;
use futures_util::stream::{self, StreamExt};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// How the provider answers one request.
pub(crate) enum Reply {
    /// A 200 event stream: the transcript, written in pieces of at most
    /// `piece` bytes (so events and even UTF-8 characters are split).
    Stream { transcript: String, piece: usize },
    /// A 200 event stream that sends `head`, then nothing, forever.
    Stall { head: String },
    /// A 200 event stream that sends `head`, then an SSE comment every
    /// 20 ms, forever; the provider notes when the client hangs up.
    KeepAlive { head: String },
    /// Any status, with headers and a body.
    Status {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
}

impl Reply {
    /// A transcript streamed in pieces of 13 bytes.
    pub(crate) fn sse(transcript: &str) -> Self {
        Reply::Stream {
            transcript: transcript.to_owned(),
            piece: 13,
        }
    }

    pub(crate) fn status(status: u16, body: &str) -> Self {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
        }
    }
}

/// A request the provider received.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
    pub at: Instant,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    hangups: AtomicUsize,
    hung_up: Notify,
}

pub(crate) struct MockProvider {
    pub base_url: String,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Counts a client hang-up when the body of a keep-alive reply is dropped.
struct HangupGuard(Arc<Shared>);

impl Drop for HangupGuard {
    fn drop(&mut self) {
        self.0.hangups.fetch_add(1, Ordering::SeqCst);
        self.0.hung_up.notify_waiters();
    }
}

impl MockProvider {
    /// Starts a provider that will answer with `replies`, in order.
    pub(crate) async fn start(replies: Vec<Reply>) -> Self {
        let shared = Arc::new(Shared::default());
        shared.replies.lock().unwrap().extend(replies);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let app = Router::new().fallback(answer).with_state(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("mock provider");
        });
        Self {
            base_url: format!("http://{addr}"),
            shared,
            task,
        }
    }

    /// The requests received so far.
    pub(crate) fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The JSON bodies received so far.
    pub(crate) fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|r| r.body).collect()
    }

    /// Waits (at most 10 s) until a client hung up on a keep-alive reply.
    pub(crate) async fn wait_for_hangup(&self) {
        let wait = async {
            loop {
                let hung_up = self.shared.hung_up.notified();
                if self.shared.hangups.load(Ordering::SeqCst) > 0 {
                    return;
                }
                hung_up.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the client hung up in time");
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    shared.requests.lock().unwrap().push(Recorded {
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body,
        at: Instant::now(),
    });
    let reply = shared.replies.lock().unwrap().pop_front();
    match reply {
        Some(Reply::Stream { transcript, piece }) => {
            let pieces: Vec<Bytes> = transcript
                .into_bytes()
                .chunks(piece.max(1))
                .map(Bytes::copy_from_slice)
                .collect();
            let body = stream::iter(pieces).then(|piece| async move {
                // Lets each piece leave as its own write.
                tokio::task::yield_now().await;
                Ok::<_, Infallible>(piece)
            });
            event_stream(Body::from_stream(body))
        }
        Some(Reply::Stall { head }) => {
            let body =
                stream::once(async move { Ok::<_, Infallible>(Bytes::from(head)) }).chain(stream::pending());
            event_stream(Body::from_stream(body))
        }
        Some(Reply::KeepAlive { head }) => {
            let guard = HangupGuard(Arc::clone(&shared));
            let pings = stream::unfold(guard, |guard| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Some((
                    Ok::<_, Infallible>(Bytes::from_static(b": keep-alive\n\n")),
                    guard,
                ))
            });
            let body = stream::once(async move { Ok::<_, Infallible>(Bytes::from(head)) }).chain(pings);
            event_stream(Body::from_stream(body))
        }
        Some(Reply::Status {
            status,
            headers,
            body,
        }) => {
            let mut response = Response::builder().status(status);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response
                .header("content-type", "application/json")
                .body(Body::from(body))
                .expect("a valid response")
        }
        None => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("the mock provider has no reply left"))
            .expect("a valid response"),
    }
}

fn event_stream(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(body)
        .expect("a valid response")
}
