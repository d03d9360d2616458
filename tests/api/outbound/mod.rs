//! Where agentd's outbound requests may go. A2A push URLs (a caller's) are
//! held to the address policy: every IPv4 and IPv6 form of an internal
//! address is refused with a clear error (`push.rs`), and pushes never go
//! through a proxy from the environment (`proxy.rs`). Operator-configured
//! URLs are followed only within their origin: an HTTP tool redirected to
//! another port is refused and its headers never leave (`http_tools.rs`),
//! and so is a webhook (`webhooks.rs`).
//!
//! The servers here: [`Origin`], an HTTP server that records what reaches
//! it and redirects where told, and [`Silent`], a listener that must
//! never see a connection.

mod http_tools;
mod proxy;
mod push;
mod webhooks;

use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// A listener that is never accepted from: a connection made to it waits
/// in its backlog, where [`Silent::assert_untouched`] finds it.
pub(crate) struct Silent {
    listener: StdListener,
    pub addr: SocketAddr,
}

impl Silent {
    pub(crate) fn bind() -> Self {
        let listener = StdListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        Self { listener, addr }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Panics if anything connected (call it once the request that must
    /// not have reached it has ended: a connection is queued by then).
    pub(crate) fn assert_untouched(&self) {
        match self.listener.accept() {
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(error) => panic!("accept: {error}"),
            Ok((_, peer)) => panic!("{peer} connected to {}, which nothing may reach", self.addr),
        }
    }
}

/// One request that reached an [`Origin`].
#[derive(Clone, Debug)]
pub(crate) struct Arrived {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// An HTTP server on `127.0.0.1:0`. `/away/{status}` answers that status
/// with a `Location` on another origin (its `elsewhere`), `/here/{status}`
/// one to `/landed` on itself; any other path is recorded and answered
/// 200 `arrived`.
pub(crate) struct Origin {
    pub addr: SocketAddr,
    arrived: watch::Receiver<Vec<Arrived>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct Routes {
    elsewhere: String,
    arrived: Arc<watch::Sender<Vec<Arrived>>>,
}

async fn answer(
    State(routes): State<Routes>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let redirect = |status: &str, location: String| {
        let status = status
            .parse()
            .ok()
            .and_then(|code| StatusCode::from_u16(code).ok());
        let status = status.unwrap_or(StatusCode::FOUND);
        (status, [("location", location)]).into_response()
    };
    if let Some(status) = path.strip_prefix("/away/") {
        return redirect(status, routes.elsewhere.clone());
    }
    if let Some(status) = path.strip_prefix("/here/") {
        return redirect(status, "/landed".into());
    }
    let arrived = Arrived {
        method,
        path,
        headers,
        body,
    };
    routes.arrived.send_modify(|all| all.push(arrived));
    (StatusCode::OK, "arrived").into_response()
}

impl Origin {
    /// An origin whose `/away/…` redirects to `elsewhere` (a full URL).
    pub(crate) async fn start(elsewhere: &str) -> Self {
        let (sender, arrived) = watch::channel(Vec::new());
        let routes = Routes {
            elsewhere: elsewhere.to_owned(),
            arrived: Arc::new(sender),
        };
        let app = Router::new().fallback(answer).with_state(routes);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        });
        Self { addr, arrived, task }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What arrived so far.
    pub(crate) fn arrived(&self) -> Vec<Arrived> {
        self.arrived.borrow().clone()
    }

    /// Waits (at most 20 s) until `count` requests have arrived.
    pub(crate) async fn wait_for(&self, count: usize) -> Vec<Arrived> {
        let mut arrived = self.arrived.clone();
        let waited = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            arrived.wait_for(|all| all.len() >= count),
        )
        .await;
        match waited {
            Ok(Ok(all)) => all.clone(),
            _ => panic!("{count} requests never arrived: {:?}", self.arrived()),
        }
    }
}

/// A JSON-RPC call of A2A `method` on the server at `addr`: the HTTP
/// status and the body.
pub(crate) async fn a2a_call(addr: SocketAddr, method: &str, params: Value) -> (u16, Value) {
    let response = crate::helpers::http()
        .post(format!("http://{addr}/a2a/jsonrpc"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("POST /a2a/jsonrpc");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// A user message of `text`, in task `task_id` (a new task when empty).
pub(crate) fn user_message(text: &str, task_id: &str) -> Value {
    json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
           "taskId": task_id, "parts": [{"text": text}]})
}

/// A task of the default agent waiting for an answer, started over A2A.
pub(crate) async fn waiting_task(addr: SocketAddr) -> String {
    let (status, body) = a2a_call(
        addr,
        "SendMessage",
        json!({"message": user_message("Help me pick a plan", "")}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let task = &body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{body}");
    task["id"].as_str().expect("a task id").to_owned()
}
