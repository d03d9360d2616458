//! A webhook receiver for the tests, on `127.0.0.1:0`: it answers each
//! request as the test scripted (a status, or no answer at all), records
//! what arrived, and checks each signature with the Standard Webhooks
//! project's own library, itself checked first against the
//! specification's test vectors. Tests wait for requests as they arrive,
//! never for a time.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The secret every test webhook signs with (the libraries' test secret).
pub(crate) const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// How the receiver answers one request.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Answer {
    Status(u16),
    /// Holds the request open and never answers.
    Hang,
}

/// One request as it arrived.
#[derive(Clone, Debug)]
pub(crate) struct Received {
    pub path: String,
    pub id: String,
    pub timestamp: String,
    pub content_type: String,
    pub body: Bytes,
    /// What the Standard Webhooks library said of the signature.
    pub verified: Result<(), String>,
}

impl Received {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub(crate) fn event_type(&self) -> String {
        self.json()["type"].as_str().expect("a type").to_owned()
    }

    pub(crate) fn run_id(&self) -> String {
        self.json()["data"]["runId"]
            .as_str()
            .expect("a run id")
            .to_owned()
    }
}

struct Shared {
    script: Mutex<VecDeque<Answer>>,
    received: Mutex<Vec<Received>>,
    count: watch::Sender<usize>,
    verifier: standardwebhooks::Webhook,
}

/// The running receiver; it stops when dropped.
pub(crate) struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The library's signature of the specification's test vector, byte for
/// byte: the verifier the receiver uses is the one that makes it.
fn check_the_verifier_against_the_test_vectors(verifier: &standardwebhooks::Webhook) {
    let signature = verifier
        .sign(
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        )
        .expect("sign");
    assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

async fn receive(
    State(shared): State<Arc<Shared>>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let verified = shared
        .verifier
        .verify(&body, &headers)
        .map_err(|error| error.to_string());
    let received = Received {
        path,
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        content_type: header("content-type"),
        body,
        verified,
    };
    let answer = shared
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Answer::Status(204));
    let count = {
        let mut all = shared.received.lock().unwrap();
        all.push(received);
        all.len()
    };
    shared.count.send_replace(count);
    match answer {
        Answer::Status(code) => StatusCode::from_u16(code).expect("a status code"),
        Answer::Hang => std::future::pending().await,
    }
}

impl Receiver {
    /// A receiver that answers its first requests as `script` says, then
    /// 204 to every other.
    pub(crate) async fn start(script: impl IntoIterator<Item = Answer>) -> Self {
        let verifier = standardwebhooks::Webhook::new(SECRET).expect("the test secret");
        check_the_verifier_against_the_test_vectors(&verifier);
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into_iter().collect()),
            received: Mutex::default(),
            count: watch::Sender::new(0),
            verifier,
        });
        let app = Router::new()
            .route("/{path}", post(receive))
            .with_state(Arc::clone(&shared));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    /// The URL of one of its paths.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// Waits (at most `limit`) until `count` requests have arrived, and
    /// returns every request so far.
    pub(crate) async fn wait_for(&self, count: usize, limit: Duration) -> Vec<Received> {
        let mut arrived = self.shared.count.subscribe();
        let reached = tokio::time::timeout(limit, arrived.wait_for(|n| *n >= count)).await;
        let received = self.received();
        assert!(
            reached.is_ok(),
            "{count} webhook requests did not arrive within {limit:?}; {} did: {:#?}",
            received.len(),
            received
                .iter()
                .map(|r| (&r.path, &r.id, r.event_type()))
                .collect::<Vec<_>>()
        );
        received
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}
