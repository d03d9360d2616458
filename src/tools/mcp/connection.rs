//! The connection to one MCP server, kept alive by a supervisor task: it
//! publishes the live session, notices when the server goes away (the
//! process exits, the HTTP endpoint stops answering), and reconnects with
//! backoff. A call while the server is away is an error result, never a
//! wait. Dropping the connection stops the supervisor (and a stdio server's
//! process, killed when dropped); when agentd stops, every session is
//! closed first (`session.rs`).
//!
//! A call runs on a task of its own and reports what happens to it as
//! [`Event`]s: its end, or (2025 protocol generation) a request for input
//! the server sent on the live session while the call was in flight. Such
//! a request names no call, so it goes to the one call in flight on the
//! session that is not already waiting for an answer (`client.rs`).

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ErrorData as McpError, RequestParamsMeta};
use rmcp::service::ServiceError;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::client::{CallError, Calls, Dial, Event, InFlight, Leg, Session, Slot};
use super::session;

/// A supervised connection to one server.
pub(super) struct Connection {
    name: String,
    slot: Arc<Slot>,
    calls: Arc<Calls>,
    supervisor: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.supervisor.abort();
    }
}

impl Connection {
    /// Supervises `session` (already connected by `dial`): from now on, a
    /// lost session is replaced by a new one.
    pub(super) fn supervise(name: &str, dial: Dial, session: Session) -> Self {
        let slot = Arc::new(Slot::default());
        let calls = Arc::clone(&dial.calls);
        let stop = CancellationToken::new();
        let (ended, watch_end) = watch::channel(());
        let supervised = session::supervise(name.to_owned(), dial, Arc::clone(&slot), session, stop.clone());
        let supervisor = tokio::spawn(async move {
            let _ended = ended;
            supervised.await;
        });
        session::register(stop, watch_end);
        Self {
            name: name.to_owned(),
            slot,
            calls,
            supervisor,
        }
    }

    pub(super) fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn calls(&self) -> &Calls {
        &self.calls
    }

    /// Starts calling `tool` with `args` (a JSON object), or retrying a
    /// call with `input_responses` and `request_state` (2026-07-28), with
    /// the trace context of the work it is made for in the request's
    /// `_meta` (see `traced_http.rs` for the headers).
    pub(super) fn call(&self, mut params: CallToolRequestParams) -> Result<Leg, CallError> {
        let live = self.slot.get().ok_or(CallError::Unavailable)?;
        if let Some(trace) = crate::propagation::outgoing() {
            params.set_traceparent(&trace.traceparent());
            if let Some(state) = trace.tracestate() {
                params.set_tracestate(&state);
            }
        }
        let id = uuid::Uuid::now_v7().to_string();
        let (sender, events) = mpsc::channel(1);
        self.calls.lock_in_flight().push(InFlight {
            id: id.clone(),
            events: sender.clone(),
            asking: false,
        });
        let calls = Arc::clone(&self.calls);
        let call_id = id.clone();
        tokio::spawn(async move {
            // Nobody follows the call any more (its run was cancelled, or
            // its question abandoned): dropping the request tells the
            // server it is cancelled.
            let response = tokio::select! {
                response = live.peer.call_tool_once(params) => response,
                () = sender.closed() => {
                    calls.ended(&call_id);
                    return;
                }
            };
            let ended = match response {
                Ok(response) => Ok(response),
                Err(ServiceError::McpError(error)) => Err(refused(error)),
                Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                    live.broken.notify_one();
                    Err(CallError::Unavailable)
                }
                Err(other) => Err(CallError::Failed(other.to_string())),
            };
            calls.ended(&call_id);
            let _ = sender.send(Event::Ended(ended)).await;
        });
        Ok(Leg { id, events })
    }
}

/// JSON-RPC's error code for "URL elicitation required" (2025-11-25).
const URL_ELICITATION_REQUIRED: i32 = -32042;

/// The call error of a server's JSON-RPC error: a URL elicitation it
/// requires, or a refusal.
fn refused(error: McpError) -> CallError {
    let requests = error
        .data
        .as_ref()
        .and_then(|data| data.get("elicitations"))
        .and_then(serde_json::Value::as_array)
        .filter(|requests| !requests.is_empty());
    match requests {
        Some(requests) if error.code.0 == URL_ELICITATION_REQUIRED => CallError::UrlRequired {
            message: error.message.to_string(),
            requests: requests.clone(),
        },
        _ => CallError::Refused(error.message.to_string()),
    }
}
