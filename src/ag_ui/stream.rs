//! The response of a run: its events as the official encoder writes them
//! (`data: {json}\n\n`, `text/event-stream`), or in the protobuf encoding
//! when the client's `Accept` asks for it (`proto.rs`). A suspension ends the
//! stream with `RUN_FINISHED`: outcome `interrupt` with one interrupt per
//! pending call, or `success` naming the frontend tool calls pending when
//! the run waits on nothing else (`events.rs` shapes both for the client's
//! generation). A replay (`replay.rs`) is answered here too. A client that leaves drops the stream;
//! the run goes on. Each stream is the stream gate's ([`guarded`]): when
//! the drain period of a shutdown is over it ends with `RUN_ERROR`, and the
//! run goes on elsewhere.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{json, Value};

use tonic::Status;
use tonic_types::StatusExt;

use super::events::{Events, Outcome, Suspension};
use super::{interrupt, proto};
use crate::agent::Agent;
use crate::domain::{PendingCall, Phase, RunRecord, Tenant, Timestamp, Usage};
use crate::door::{OpenStream, StreamGate};
use crate::runtime::{RunStream, Runtime};

/// How events are written: as server-sent events (JSON), or in the
/// protobuf encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Encoding {
    EventStream,
    Protobuf,
}

impl Encoding {
    /// The encoding `accept` (an `Accept` header) asks for.
    pub(super) fn of(accept: Option<&str>) -> Self {
        match accept {
            Some(accept) if accept.contains(proto::MEDIA_TYPE) => Self::Protobuf,
            _ => Self::EventStream,
        }
    }

    fn encode(self, event: &Value) -> Bytes {
        match self {
            Self::EventStream => Bytes::from(format!("data: {event}\n\n")),
            Self::Protobuf => proto::encode(event),
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Self::EventStream => "text/event-stream",
            Self::Protobuf => proto::MEDIA_TYPE,
        }
    }
}

fn event_stream(encoding: Encoding, body: Body) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(encoding.content_type()),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// What a run waiting on `pending` (until `expires_at`) waits on, as a
/// `RUN_FINISHED` outcome: the frontend tool calls when it waits on
/// nothing else, otherwise an interrupt per call.
pub(super) fn waiting_outcome(
    pending: &[PendingCall],
    agent: Option<&Agent>,
    expires_at: Option<Timestamp>,
) -> Outcome {
    if !pending.is_empty() && pending.iter().all(interrupt::is_client_tool) {
        return Outcome::PendingTools(pending.iter().map(|call| call.call.id.clone()).collect());
    }
    Outcome::Interrupt(
        pending
            .iter()
            .map(|call| interrupt::interrupt(call, agent, expires_at))
            .collect(),
    )
}

/// The `RUN_FINISHED` of a stream that ended suspended.
async fn suspended(events: &Events, runtime: &Runtime, tenant: &Tenant, suspension: Suspension) -> Value {
    let stored = runtime.get_run(tenant, events.run_id()).await.ok();
    let agent: Option<Arc<Agent>> = stored
        .as_ref()
        .and_then(|run| runtime.agents().get(&run.agent_id).cloned());
    let (mut pending, mut expires_at) = (suspension.pending, suspension.expires_at);
    if let Some(Phase::Suspended {
        pending: now,
        expires_at: at,
        ..
    }) = stored.as_ref().map(RunRecord::phase)
    {
        expires_at = Some(*at);
        if pending.is_empty() {
            pending = now.to_vec();
        }
    }
    let outcome = waiting_outcome(&pending, agent.as_deref(), expires_at);
    events.run_finished(Timestamp::now(), outcome, suspension.usage)
}

/// The events of `stream`, a run's, made by `events`.
pub(super) fn response(
    runtime: Runtime,
    tenant: Tenant,
    events: Events,
    stream: RunStream,
    encoding: Encoding,
) -> Response {
    let chunks = stream.map_events(Clone::clone);
    let body = futures_util::stream::unfold(
        (chunks, events, runtime, tenant),
        move |(mut chunks, mut events, runtime, tenant)| async move {
            let event = chunks.next().await?;
            let (mut out, suspension) = events.of(&event);
            if let Some(suspension) = suspension {
                out.push(suspended(&events, &runtime, &tenant, suspension).await);
            }
            let bytes: Vec<Bytes> = out.iter().map(|event| encoding.encode(event)).collect();
            Some((bytes.concat(), (chunks, events, runtime, tenant)))
        },
    )
    .filter(|bytes| std::future::ready(!bytes.is_empty()))
    .map(|bytes| Ok::<_, std::convert::Infallible>(Bytes::from(bytes)));
    event_stream(encoding, Body::from_stream(body))
}

/// A response of `events`, all known at once.
pub(super) fn complete(events: &[Value], encoding: Encoding) -> Response {
    let body: Vec<Bytes> = events.iter().map(|event| encoding.encode(event)).collect();
    event_stream(encoding, Body::from(body.concat()))
}

/// `response`'s body, admitted as `open`: counted among the open streams
/// until it ends, and ended with a `RUN_ERROR` (code `SERVER_SHUTDOWN`)
/// when the gate closes at the end of the drain period.
pub(super) fn guarded(
    gate: &StreamGate,
    open: OpenStream,
    encoding: Encoding,
    response: Response,
) -> Response {
    let (parts, body) = response.into_parts();
    let frames = body
        .into_data_stream()
        .map(|frame| frame.map_err(|error| Status::internal(error.to_string())));
    let body = gate.guard(frames, open, None).map(move |frame| {
        Ok::<_, std::convert::Infallible>(match frame {
            Ok(bytes) => bytes,
            Err(ended) => encoding.encode(&run_error(&ended)),
        })
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// The `RUN_ERROR` of a stream the server ended with `status`.
fn run_error(status: &Status) -> Value {
    let code = status
        .get_details_error_info()
        .map_or_else(|| "SERVER_SHUTDOWN".to_owned(), |info| info.reason);
    json!({
        "type": "RUN_ERROR",
        "timestamp": Timestamp::now().0 / 1000,
        "message": status.message(),
        "code": code,
    })
}

/// The events of a run that a `cancelled` resume entry cancelled, made by
/// `events`.
pub(super) fn cancelled(events: &Events, run: &RunRecord, encoding: Encoding) -> Response {
    let at = Timestamp::now();
    let started = Events::event(
        "RUN_STARTED",
        at,
        json!({
            "threadId": events.thread_id(),
            "runId": run.id.to_string(),
            "metadata": {"agentd": {"agentId": run.agent_id, "resumed": true}},
        }),
    );
    let finished = events.run_finished(at, Outcome::Cancelled, Usage::default());
    complete(&[started, finished], encoding)
}
