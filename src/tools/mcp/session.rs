//! Opening a session with an MCP server and keeping it: the handshake
//! (a server that answered but does not speak a pinned protocol is said to,
//! at once), the supervisor that reconnects with backoff, and the stop of
//! every supervisor when agentd stops ([`stop_all`]): each session ends as
//! the specification's stdio shutdown says, the server's stdin closed,
//! then, if it has not exited, SIGTERM, then SIGKILL, each after a grace
//! (rmcp's child-process transport does the sequence), so that no server is
//! left running, waiting on a request of its own.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::client::{Client, Dial, Live, Session, Slot};
use super::config::{Endpoint, Protocol};
use super::traced_http::TracedHttpClient;

/// The first wait before reconnecting; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// How long [`stop_all`] waits for the sessions to end: rmcp's
/// child-process transport waits up to 3 s after closing a server's stdin
/// and 3 s after SIGTERM before SIGKILL, and up to 2 s for handlers first.
const STOP_WITHIN: Duration = Duration::from_secs(15);

/// A supervisor to stop: its token, and a receiver that sees the end of
/// the supervisor (its sender dropped).
struct Supervisor {
    stop: CancellationToken,
    ended: watch::Receiver<()>,
}

/// Every live supervisor of the process.
static SUPERVISORS: Mutex<Vec<Supervisor>> = Mutex::new(Vec::new());

fn supervisors() -> std::sync::MutexGuard<'static, Vec<Supervisor>> {
    SUPERVISORS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Ends every MCP session of the process, for shutdown: each supervisor
/// stops and closes its session (a stdio server: stdin closed, then
/// SIGTERM, then SIGKILL). Waits for them, at most [`STOP_WITHIN`].
pub async fn stop_all() {
    let stopping: Vec<Supervisor> = std::mem::take(&mut *supervisors());
    for supervisor in &stopping {
        supervisor.stop.cancel();
    }
    let ended = async {
        for mut supervisor in stopping {
            // Err once the supervisor is gone, which is the point.
            let _ = supervisor.ended.changed().await;
        }
    };
    if tokio::time::timeout(STOP_WITHIN, ended).await.is_err() {
        tracing::warn!("some MCP servers' sessions did not end within {STOP_WITHIN:?}");
    }
}

/// Keeps supervisor `stop` (whose end `ended` sees) for [`stop_all`].
pub(super) fn register(stop: CancellationToken, ended: watch::Receiver<()>) {
    let mut live = supervisors();
    // Those whose connection was dropped are gone.
    live.retain(|supervisor| supervisor.ended.has_changed().is_ok());
    live.push(Supervisor { stop, ended });
}

/// How a session starts with a server that speaks `protocol`.
fn lifecycle(protocol: &Protocol) -> ClientLifecycleMode {
    match protocol {
        Protocol::Auto => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
        Protocol::Stateless => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        Protocol::Initialize(_) => ClientLifecycleMode::Initialize,
    }
}

/// Why a session could not be opened, and whether trying again may help.
#[derive(Debug)]
pub(super) struct ConnectError {
    reason: String,
    /// False when the server answered and cannot be talked to as asked
    /// (it does not speak the pinned protocol version): retrying changes
    /// nothing.
    retry: bool,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl ConnectError {
    fn retry(reason: String) -> Self {
        Self { reason, retry: true }
    }
}

/// Why the handshake with the server at `place` (its URL or command)
/// failed: a server that answered but does not speak the pinned 2026-07-28
/// protocol is said to, not to be unreachable.
fn handshake_failed(error: ClientInitializeError, protocol: &Protocol, place: &str) -> ConnectError {
    let answered = matches!(
        error,
        ClientInitializeError::JsonRpcError(_)
            | ClientInitializeError::NoCompatibleProtocolVersion { .. }
            | ClientInitializeError::ExpectedInitResult(_)
    );
    match protocol {
        Protocol::Stateless if answered => ConnectError {
            reason: format!(
                "{place} answered but does not speak protocol_version = \"2026-07-28\" (its answer to \
                 server/discover: {error}); set protocol_version = \"auto\", or the version it speaks \
                 (\"2025-11-25\", \"2025-06-18\")"
            ),
            retry: false,
        },
        Protocol::Initialize(version) if answered => ConnectError {
            reason: format!(
                "{place} answered but refused the handshake on protocol {version}: {error}; \
                 set protocol_version = \"auto\" to let agentd pick"
            ),
            retry: false,
        },
        _ => ConnectError::retry(format!("cannot reach {place}: {error}")),
    }
}

/// Opens a session: starts the process or reaches the URL, then runs the
/// MCP handshake (or discovery, on the 2026-07-28 protocol).
pub(super) async fn connect(dial: &Dial) -> Result<Session, ConnectError> {
    let client = Client {
        calls: Arc::clone(&dial.calls),
        protocol: dial.protocol.clone(),
    };
    let lifecycle = lifecycle(&dial.protocol);
    match &dial.endpoint {
        Endpoint::Stdio { command, args, env } => {
            let mut process = tokio::process::Command::new(command);
            // However the transport ends, the process does not outlive it.
            process.args(args).kill_on_drop(true);
            for (key, value) in env.iter() {
                process.env(key, value);
            }
            let transport = TokioChildProcess::new(process)
                .map_err(|e| ConnectError::retry(format!("cannot start {command:?}: {e}")))?;
            client
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| match e {
                    ClientInitializeError::JsonRpcError(_)
                    | ClientInitializeError::NoCompatibleProtocolVersion { .. }
                    | ClientInitializeError::ExpectedInitResult(_) => {
                        handshake_failed(e, &dial.protocol, &format!("{command:?}"))
                    }
                    e => ConnectError::retry(format!("handshake failed: {e}")),
                })
        }
        Endpoint::Http { url, headers } => {
            let config =
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers.clone());
            let http = TracedHttpClient::new()
                .map_err(|e| ConnectError::retry(format!("cannot set up an HTTP client: {e}")))?;
            let transport = StreamableHttpClientTransport::with_client(http, config);
            client
                .serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| {
                    let mut failed = handshake_failed(e, &dial.protocol, url.as_str());
                    failed.reason = crate::config::redact(&failed.reason).into_owned();
                    failed
                })
        }
    }
}

/// Keeps a session published; when it ends (or a call finds it broken),
/// reconnects with backoff, until `stop`, which closes the session.
pub(super) async fn supervise(
    name: String,
    dial: Dial,
    slot: Arc<Slot>,
    mut session: Session,
    stop: CancellationToken,
) {
    loop {
        let broken = Arc::new(Notify::new());
        slot.set(Some(Live {
            peer: session.peer().clone(),
            broken: Arc::clone(&broken),
        }));
        let closer = session.cancellation_token();
        // In a block of its own: a broken session is dropped (and so
        // closed) before the next is dialled.
        {
            let mut waiting = std::pin::pin!(session.waiting());
            tokio::select! {
                reason = &mut waiting => {
                    tracing::warn!(server = %name, ?reason, "MCP server went away; reconnecting");
                }
                () = broken.notified() => {
                    // Dropping the session (with the select) closes it.
                    tracing::warn!(server = %name, "MCP server connection broke; reconnecting");
                }
                () = stop.cancelled() => {
                    slot.set(None);
                    // The session's end, awaited: the transport's close (a
                    // stdio server's stdin, then SIGTERM, then SIGKILL).
                    closer.cancel();
                    if let Err(error) = waiting.await {
                        tracing::warn!(server = %name, %error, "closing the MCP session failed");
                    }
                    tracing::info!(server = %name, "MCP server session closed");
                    return;
                }
            }
        }
        slot.set(None);
        session = tokio::select! {
            session = reconnect(&name, &dial) => session,
            () = stop.cancelled() => return,
        };
        tracing::info!(server = %name, "MCP server reconnected");
    }
}

/// Connects, retrying with backoff until it works. The first failure is a
/// warning; the retries that follow are logged at debug level.
async fn reconnect(name: &str, dial: &Dial) -> Session {
    let mut backoff = FIRST_BACKOFF;
    let mut failures = 0u32;
    loop {
        tokio::time::sleep(backoff).await;
        match connect(dial).await {
            Ok(session) => return session,
            Err(reason) => {
                let reason = reason.to_string();
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
pub(super) async fn connect_within(dial: &Dial, deadline: Duration) -> Result<Session, String> {
    let give_up = tokio::time::Instant::now() + deadline;
    let mut backoff = FIRST_BACKOFF;
    loop {
        let attempt = tokio::time::timeout_at(give_up, connect(dial)).await;
        let reason = match attempt {
            Ok(Ok(session)) => return Ok(session),
            // Trying again changes nothing: said at once.
            Ok(Err(failed)) if !failed.retry => return Err(failed.reason),
            Ok(Err(failed)) => failed.reason,
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
