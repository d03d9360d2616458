//! agentd as an MCP client of one server: what it declares (elicitation,
//! form and URL), the calls in flight on the live session and those
//! suspended on a request for input (a request of the 2025 protocol
//! generation names no call: it goes to the one call in flight that is not
//! already waiting for an answer), and the session as calls and its
//! supervisor share it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationCapability, ErrorData as McpError, FormElicitationCapability, Implementation, ProtocolVersion,
    UrlElicitationCapability,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RunningService};
use rmcp::ClientHandler;
use tokio::sync::{mpsc, oneshot, Notify};

use super::config::{Endpoint, Protocol};

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
    pub(super) events: mpsc::Receiver<Event>,
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
pub(super) struct InFlight {
    pub(super) id: String,
    pub(super) events: mpsc::Sender<Event>,
    /// The call's request for input waits for an answer: the server asks
    /// nothing more of this call until it has one.
    pub(super) asking: bool,
}

/// The calls of a connection: those in flight (for the server's requests
/// for input to find theirs) and those suspended on such a request.
#[derive(Default)]
pub(super) struct Calls {
    in_flight: Mutex<Vec<InFlight>>,
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl Calls {
    pub(super) fn lock_in_flight(&self) -> std::sync::MutexGuard<'_, Vec<InFlight>> {
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
    pub(super) fn ended(&self, id: &str) {
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
    pub(super) fn get(&self) -> Option<Live> {
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
