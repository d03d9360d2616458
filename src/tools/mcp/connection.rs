//! The connection to one MCP server, kept alive by a supervisor task: it
//! publishes the live session, notices when the server goes away (the
//! process exits, the HTTP endpoint stops answering), and reconnects with
//! backoff. A call while the server is away is an error result, never a
//! wait. Dropping the connection stops the supervisor (and a stdio server's
//! process).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, Implementation, RequestParamsMeta};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::config::Endpoint;
use super::traced_http::TracedHttpClient;

/// A session with a server.
pub(super) type Session = RunningService<RoleClient, ClientConfig>;

/// The first wait before reconnecting; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Why a call got no result.
#[derive(Debug)]
pub(super) enum CallError {
    /// Not connected, or the connection broke during the call.
    Unavailable,
    /// No answer within the call timeout.
    TimedOut,
    /// The server answered with a JSON-RPC error.
    Refused(String),
    /// Anything else the client reports.
    Failed(String),
}

/// The live session, as calls use it.
#[derive(Clone)]
struct Live {
    peer: Peer<RoleClient>,
    /// Tells the supervisor the session is broken, so it reconnects.
    broken: Arc<Notify>,
}

/// The session currently usable, if any.
#[derive(Default)]
struct Slot(Mutex<Option<Live>>);

impl Slot {
    fn get(&self) -> Option<Live> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, live: Option<Live>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = live;
    }
}

/// A supervised connection to one server.
pub(super) struct Connection {
    name: String,
    slot: Arc<Slot>,
    call_timeout: Duration,
    supervisor: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.supervisor.abort();
    }
}

impl Connection {
    /// Supervises `session` (already connected): from now on, a lost
    /// session is replaced by a new one.
    pub(super) fn supervise(
        name: &str,
        endpoint: Endpoint,
        session: Session,
        call_timeout: Duration,
    ) -> Self {
        let slot = Arc::new(Slot::default());
        let supervisor = tokio::spawn(supervise(name.to_owned(), endpoint, Arc::clone(&slot), session));
        Self {
            name: name.to_owned(),
            slot,
            call_timeout,
            supervisor,
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// Calls `tool` with `args` (a JSON object), with the trace context of
    /// the work it is made for in the request's `_meta` (see
    /// `traced_http.rs` for the headers).
    pub(super) async fn call(&self, tool: &str, args: &Value) -> Result<CallToolResult, CallError> {
        let live = self.slot.get().ok_or(CallError::Unavailable)?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(arguments) = args {
            params = params.with_arguments(arguments.clone());
        }
        if let Some(trace) = crate::propagation::outgoing() {
            params.set_traceparent(&trace.traceparent());
            if let Some(state) = trace.tracestate() {
                params.set_tracestate(&state);
            }
        }
        match tokio::time::timeout(self.call_timeout, live.peer.call_tool(params)).await {
            Err(_) => Err(CallError::TimedOut),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(error))) => Err(CallError::Refused(error.message.to_string())),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                live.broken.notify_one();
                Err(CallError::Unavailable)
            }
            Ok(Err(other)) => Err(CallError::Failed(other.to_string())),
        }
    }
}

/// What agentd tells servers about itself.
fn client_config() -> ClientConfig {
    let mut config = ClientConfig::default();
    config.client_info = Implementation::new("agentd", env!("CARGO_PKG_VERSION"));
    config
}

/// Opens a session: starts the process or reaches the URL, then runs the
/// MCP handshake.
pub(super) async fn connect(endpoint: &Endpoint) -> Result<Session, String> {
    match endpoint {
        Endpoint::Stdio { command, args, env } => {
            let mut process = tokio::process::Command::new(command);
            process.args(args);
            for (key, value) in env.iter() {
                process.env(key, value);
            }
            let transport =
                TokioChildProcess::new(process).map_err(|e| format!("cannot start {command:?}: {e}"))?;
            client_config()
                .serve(transport)
                .await
                .map_err(|e| format!("handshake failed: {e}"))
        }
        Endpoint::Http { url, headers } => {
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers.clone());
            let client = TracedHttpClient::new().map_err(|e| format!("cannot set up an HTTP client: {e}"))?;
            let transport = StreamableHttpClientTransport::with_client(client, config);
            client_config()
                .serve(transport)
                .await
                .map_err(|e| format!("cannot reach {url}: {e}"))
        }
    }
}

/// Keeps a session published; when it ends (or a call finds it broken),
/// reconnects with backoff, forever.
async fn supervise(name: String, endpoint: Endpoint, slot: Arc<Slot>, mut session: Session) {
    loop {
        let broken = Arc::new(Notify::new());
        slot.set(Some(Live {
            peer: session.peer().clone(),
            broken: Arc::clone(&broken),
        }));
        tokio::select! {
            reason = session.waiting() => {
                tracing::warn!(server = %name, ?reason, "MCP server went away; reconnecting");
            }
            () = broken.notified() => {
                // Dropping the session (with the select) closes it.
                tracing::warn!(server = %name, "MCP server connection broke; reconnecting");
            }
        }
        slot.set(None);
        session = reconnect(&name, &endpoint).await;
        tracing::info!(server = %name, "MCP server reconnected");
    }
}

/// Connects, retrying with backoff until it works. The first failure is a
/// warning; the retries that follow are logged at debug level.
async fn reconnect(name: &str, endpoint: &Endpoint) -> Session {
    let mut backoff = FIRST_BACKOFF;
    let mut failures = 0u32;
    loop {
        tokio::time::sleep(backoff).await;
        match connect(endpoint).await {
            Ok(session) => return session,
            Err(reason) => {
                failures += 1;
                if failures == 1 {
                    tracing::warn!(server = %name, %reason, "MCP server unavailable; still retrying");
                } else {
                    tracing::debug!(server = %name, %reason, failures, "MCP server still unavailable");
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Connects at start-up, retrying with backoff until `deadline` passes.
pub(super) async fn connect_within(endpoint: &Endpoint, deadline: Duration) -> Result<Session, String> {
    let give_up = tokio::time::Instant::now() + deadline;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let attempt = tokio::time::timeout_at(give_up, connect(endpoint)).await;
        let reason = match attempt {
            Ok(Ok(session)) => return Ok(session),
            Ok(Err(reason)) => reason,
            Err(_) => "no answer in time".to_owned(),
        };
        let now = tokio::time::Instant::now();
        if now + backoff >= give_up {
            return Err(reason);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}
