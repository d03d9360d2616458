//! MCP sessions bound to the caller that opened them. A session
//! (`Mcp-Session-Id`, begun by `initialize`) answers only its owner: the
//! tenant and the name of the key (or client certificate) that opened it.
//! A request naming another caller's session gets the answer of an unknown
//! session (404), so another key can neither list nor call tools on it,
//! answer its questions (elicitations), nor delete it, and learns nothing
//! of whether it exists. On an open server (no keys) every caller is
//! tenant `default`, named by its client certificate's subject or not at
//! all: callers without certificates share one owner, as they share
//! everything else.
//!
//! [`bind`] checks and records owners in front of rmcp's service;
//! [`OwnedSessions`] is rmcp's session manager that forgets an owner when
//! its session closes (DELETE, idle timeout, shutdown).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Request, State};
use axum::http::{Extensions, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::session::{EventStore, ServerSseMessage};
use rmcp::transport::streamable_http_server::{RestoreOutcome, SessionId, SessionManager};

use crate::domain::Tenant;
use crate::door::CallerName;

/// What rmcp answers for a session it does not know, word for word.
const UNKNOWN_SESSION: &str = "Not Found: Session not found";

/// Who opened a session.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Owner {
    tenant: Tenant,
    name: String,
}

impl Owner {
    /// The caller of a request, as the guard in front put it in its
    /// extensions.
    fn of(extensions: &Extensions) -> Self {
        Self {
            tenant: extensions.get::<Tenant>().cloned().unwrap_or_default(),
            name: extensions
                .get::<CallerName>()
                .map(|CallerName(name)| name.clone())
                .unwrap_or_default(),
        }
    }
}

/// The owner of each open session. Cloning shares them.
#[derive(Clone, Debug, Default)]
pub(super) struct Owners(Arc<Mutex<HashMap<SessionId, Owner>>>);

impl Owners {
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Owner>> {
        // Every critical section is one lookup, insert or removal.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn owned_by(&self, id: &str, caller: &Owner) -> bool {
        self.lock().get(id).is_some_and(|owner| owner == caller)
    }
}

/// The session a request or response names.
fn session_of(headers: &HeaderMap) -> Option<SessionId> {
    let id = headers.get(HEADER_SESSION_ID)?.to_str().ok()?;
    Some(SessionId::from(id))
}

/// Lets a request for a session through only from its owner (404, as for
/// an unknown session, otherwise), and makes the caller whose request
/// opened a session its owner.
pub(super) async fn bind(State(owners): State<Owners>, request: Request, next: Next) -> Response {
    let caller = Owner::of(request.extensions());
    if let Some(id) = session_of(request.headers()) {
        if !owners.owned_by(&id, &caller) {
            return (StatusCode::NOT_FOUND, UNKNOWN_SESSION).into_response();
        }
        return next.run(request).await;
    }
    let response = next.run(request).await;
    // Recorded before the client learns the id from these headers.
    if let Some(id) = session_of(response.headers()) {
        owners.lock().insert(id, caller);
    }
    response
}

/// rmcp's session manager `M`, forgetting each session's owner when the
/// session closes.
pub(super) struct OwnedSessions<M> {
    inner: M,
    owners: Owners,
}

impl<M> OwnedSessions<M> {
    pub(super) fn new(inner: M, owners: Owners) -> Self {
        Self { inner, owners }
    }
}

impl<M: SessionManager> SessionManager for OwnedSessions<M> {
    type Error = M::Error;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners.lock().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(tenant: &str, name: &str) -> Owner {
        Owner {
            tenant: Tenant::new(tenant).unwrap(),
            name: name.to_owned(),
        }
    }

    #[test]
    fn a_session_is_owned_by_its_tenant_and_key() {
        let owners = Owners::default();
        owners
            .lock()
            .insert(SessionId::from("s"), caller("acme", "deploy-bot"));
        assert!(owners.owned_by("s", &caller("acme", "deploy-bot")));
        assert!(!owners.owned_by("s", &caller("acme", "other-key")));
        assert!(!owners.owned_by("s", &caller("globex", "deploy-bot")));
        assert!(!owners.owned_by("unknown", &caller("acme", "deploy-bot")));
    }
}
