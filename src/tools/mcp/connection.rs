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
//! session that is not already waiting for an answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorData as McpError, FormElicitationCapability, Implementation,
    ProtocolVersion, RequestParamsMeta, UrlElicitationCapability,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RunningService, ServiceError};
use rmcp::ClientHandler;
use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::config::{Endpoint, Protocol};
use super::session;

/// A session with a server.
pub(super) type Session = RunningService<RoleClient, Client>;

/// Why a call got no result.
#[derive(Debug)]
pub(super) enum CallError {
    /// Not connected, or the connection broke during the call.
    Unavailable,
    /// No answer within the call timeout.
    TimedOut,
    /// The server answered with a JSON-RPC error.
    Refused(String),
    /// The server answered that the person must open a page first
    /// (`-32042`, URL elicitation required): its message, and its URL
    /// requests for input (`data.elicitations`).
    UrlRequired {
        message: String,
        requests: Vec<serde_json::Value>,
    },
    /// Anything else the client reports.
    Failed(String),
}

/// What happens to a call in flight.
pub(super) enum Event {
    /// The server asks for input on the live session; `reply` takes the
    /// response (dropping it answers with an error).
    Asked {
        request: ElicitRequestParams,
        reply: oneshot::Sender<ElicitResult>,
    },
    /// The call ended.
    Ended(Result<CallToolResponse, CallError>),
}

/// A call in flight: its events, in order, until it ends.
pub(super) struct Leg {
    /// The call's id, unique across processes and restarts.
    pub(super) id: String,
    events: mpsc::Receiver<Event>,
}

impl Leg {
    /// The call's next event, or [`CallError::TimedOut`] after `timeout`.
    pub(super) async fn next(&mut self, timeout: Duration) -> Event {
        match tokio::time::timeout(timeout, self.events.recv()).await {
            Err(_) => Event::Ended(Err(CallError::TimedOut)),
            Ok(Some(event)) => event,
            // The call's task is gone without a word: the process is
            // shutting down.
            Ok(None) => Event::Ended(Err(CallError::Unavailable)),
        }
    }
}

/// A call suspended on a request for input of the live session: the
/// reply the server waits for, and the rest of the call.
pub(super) struct Waiting {
    pub(super) reply: oneshot::Sender<ElicitResult>,
    pub(super) leg: Leg,
}

/// One call in flight on the live session.
struct InFlight {
    id: String,
    events: mpsc::Sender<Event>,
    /// The call's request for input waits for an answer: the server asks
    /// nothing more of this call until it has one.
    asking: bool,
}

/// The calls of a connection: those in flight (for the server's requests
/// for input to find theirs) and those suspended on such a request.
#[derive(Default)]
pub(super) struct Calls {
    in_flight: Mutex<Vec<InFlight>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl Calls {
    fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, Vec<InFlight>> {
        self.in_flight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The call a request for input of the live session is for: the one in
    /// flight that waits for no answer, marked as asking.
    fn asker(&self) -> Result<mpsc::Sender<Event>, McpError> {
        let mut in_flight = self.lock_in_flight();
        let mut free = in_flight.iter_mut().filter(|call| !call.asking);
        match (free.next(), free.next()) {
            (Some(call), None) => {
                call.asking = true;
                Ok(call.events.clone())
            }
            (None, _) => Err(McpError::invalid_request(
                "agentd has no tool call in flight on this session that could ask for input",
                None,
            )),
            (Some(_), Some(_)) => Err(McpError::invalid_request(
                "agentd has several tool calls in flight on this session and cannot tell which one asks for input; \
                 a server that asks during concurrent calls should speak the 2026-07-28 protocol",
                None,
            )),
        }
    }

    /// The call `id` has its answer: it may ask again.
    pub(super) fn answered(&self, id: &str) {
        if let Some(call) = self.lock_in_flight().iter_mut().find(|call| call.id == id) {
            call.asking = false;
        }
    }

    /// Keeps a call suspended on a request for input until its answer.
    pub(super) fn suspend(&self, waiting: Waiting) {
        self.lock_waiting().insert(waiting.leg.id.clone(), waiting);
    }

    /// The suspended call `id`, if its request still waits here.
    pub(super) fn take(&self, id: &str) -> Option<Waiting> {
        self.lock_waiting().remove(id)
    }

    /// The call `id` ended: it is no longer in flight, and a request for
    /// input it left unanswered is gone with it.
    fn ended(&self, id: &str) {
        self.lock_in_flight().retain(|call| call.id != id);
        self.lock_waiting().remove(id);
    }
}

/// agentd as an MCP client: it declares elicitation (form and URL) and
/// hands each request for input of the live session to its call.
#[derive(Clone)]
pub(super) struct Client {
    pub(super) calls: Arc<Calls>,
    pub(super) protocol: Protocol,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new("agentd", env!("CARGO_PKG_VERSION"));
        if let Protocol::Initialize(version) = &self.protocol {
            config.protocol_version = match *version {
                "2025-06-18" => ProtocolVersion::V_2025_06_18,
                _ => ProtocolVersion::V_2025_11_25,
            };
        }
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        );
        config.capabilities = capabilities;
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        // A link no person should be shown is refused here, where it
        // enters, with an error the server can read: nothing suspends on it.
        if let Err(why) = super::elicitation::refuse_unsafe_link(&request) {
            tracing::warn!(%why, "an MCP server's request for input was refused");
            return Err(McpError::invalid_params(
                format!("request for input refused: {why}"),
                None,
            ));
        }
        let call = self.calls.asker()?;
        let (reply, answer) = oneshot::channel();
        let ended = || {
            McpError::internal_error(
                "the tool call ended before its request for input was answered",
                None,
            )
        };
        call.send(Event::Asked { request, reply })
            .await
            .map_err(|_| ended())?;
        answer.await.map_err(|_| ended())
    }
}

/// The live session, as calls use it.
#[derive(Clone)]
pub(super) struct Live {
    pub(super) peer: Peer<RoleClient>,
    /// Tells the supervisor the session is broken, so it reconnects.
    pub(super) broken: Arc<Notify>,
}

/// The session currently usable, if any.
#[derive(Default)]
pub(super) struct Slot(Mutex<Option<Live>>);

impl Slot {
    fn get(&self) -> Option<Live> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(super) fn set(&self, live: Option<Live>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = live;
    }
}

/// How to open a session with a server.
#[derive(Clone)]
pub(super) struct Dial {
    pub(super) endpoint: Endpoint,
    pub(super) protocol: Protocol,
    pub(super) calls: Arc<Calls>,
}

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
