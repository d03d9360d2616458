//! agentd's agents for AG-UI frontends (`@ag-ui/core` 1.0): `POST
//! /ag-ui/{agent_id}` (`/ag-ui` for the default agent) takes a
//! `RunAgentInput` and answers with the run as a `text/event-stream` of
//! AG-UI events (or their protobuf encoding, when asked for); `GET /ag-ui/{agent_id}/capabilities` says what the agent
//! can do. Same API keys and tenants as gRPC. A suspension is an interrupt
//! per pending call (`interrupt.rs`), answered by the next request's
//! `resume` through Resume, all at once; a frontend tool's call ends the
//! stream with its id pending, answered by the next request's `tool`
//! message. It converts and authorises; every operation is the runtime
//! API's.

mod capabilities;
mod error;
mod events;
mod input;
mod interrupt;
mod proto;
mod run;
mod stream;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::grpc::{Authenticator, StreamGate};
use crate::runtime::Runtime;

pub use error::ApiError;

/// The path of the default agent's endpoint.
pub const PATH: &str = "/ag-ui";

/// The `/ag-ui` routes, serving `runtime`'s agents to the callers
/// `authenticator` lets in, each run's stream behind `gate`.
pub fn routes(runtime: Runtime, authenticator: Authenticator, gate: StreamGate) -> axum::Router {
    let max_body = runtime.limits().max_request_bytes;
    axum::Router::new()
        .route(PATH, post(run::run_default))
        .route("/ag-ui/capabilities", get(capabilities::of_default))
        .route("/ag-ui/{agent_id}", post(run::run_agent))
        .route("/ag-ui/{agent_id}/capabilities", get(capabilities::of_agent))
        .with_state(runtime)
        .layer(axum::Extension(gate))
        .layer(axum::extract::DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn_with_state(authenticator, check))
}

/// Lets a request through with its caller's tenant, or refuses it with
/// 401 without a valid API key.
async fn check(State(authenticator): State<Authenticator>, mut request: Request, next: Next) -> Response {
    let metadata = tonic::metadata::MetadataMap::from_headers(request.headers().clone());
    match authenticator.identify(&metadata) {
        Ok(credential) => {
            let name = crate::grpc::caller::name_of(credential.as_ref(), request.extensions());
            let tenant = credential.map(|credential| credential.tenant).unwrap_or_default();
            request.extensions_mut().insert(tenant);
            request
                .extensions_mut()
                .insert(crate::grpc::caller::CallerName(name));
            next.run(request).await
        }
        Err(status) => {
            ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", status.message()).into_response()
        }
    }
}
