//! agentd's agents for AG-UI frontends (`@ag-ui/core` 1.0, and the 0.0.x
//! clients CopilotKit pins, told apart by `protocolVersion`): `POST
//! /ag-ui/{agent_id}` (`/ag-ui` for the default agent) takes a
//! `RunAgentInput` and answers with the run as a `text/event-stream` of
//! AG-UI events (or their protobuf encoding, when asked for); `GET /ag-ui/{agent_id}/capabilities` says what the agent
//! can do. Same API keys and tenants as gRPC (the door lets a caller in
//! and puts who it is in the request's extensions). A suspension is an interrupt
//! per pending call (`interrupt.rs`), answered by the next request's
//! `resume` through Resume, all at once; a frontend tool's call ends the
//! stream with its id pending, answered by the next request's `tool`
//! message. A request that brings nothing new replays the thread
//! (`replay.rs`). It converts and authorises; every operation is the
//! runtime API's.

mod capabilities;
mod error;
mod events;
mod input;
mod interrupt;
mod proto;
mod replay;
mod run;
mod stream;

use axum::routing::{get, post};

use crate::door::StreamGate;
use crate::runtime::Runtime;

pub(crate) use error::ApiError;

/// The path of the default agent's endpoint.
pub(crate) const PATH: &str = "/ag-ui";

/// The `/ag-ui` routes, serving `runtime`'s agents to the callers the
/// door lets in, each run's stream behind `gate`.
pub(crate) fn routes(runtime: Runtime, gate: StreamGate) -> axum::Router {
    let max_body = runtime.limits().max_request_bytes;
    axum::Router::new()
        .route(PATH, post(run::run_default))
        .route("/ag-ui/capabilities", get(capabilities::of_default))
        .route("/ag-ui/{agent_id}", post(run::run_agent))
        .route("/ag-ui/{agent_id}/capabilities", get(capabilities::of_agent))
        .with_state(runtime)
        .layer(axum::Extension(gate))
        .layer(axum::extract::DefaultBodyLimit::max(max_body))
}
