//! `POST /ag-ui/{agent_id}`: a request starts a run on its thread, or
//! continues the thread's suspended run: `resume` entries answer its
//! interrupts, `tool` messages its frontend tools' calls; a request that
//! brings nothing new replays the thread (`replay.rs`). Refusals come
//! before any event; then the run streams as AG-UI events (`stream.rs`),
//! shaped for the generation the request speaks.

use std::collections::HashSet;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use axum::Extension;

use super::error::{answer_message, payload_field, ApiError};
use super::events::Events;
use super::input::{self, ClientMessage, ResumeStatus, RunInput};
use super::stream::{self, Encoding};
use super::{interrupt, replay};
use crate::domain::{Decider, DecisionSource, PendingCall, Phase, RunRecord, Tenant};
use crate::door::CallerName;
use crate::door::StreamGate;
use crate::runtime::{CallAnswer, ResumeRun, Runtime, RuntimeError, StartRun};

pub(super) async fn run_default(
    State(runtime): State<Runtime>,
    Extension(gate): Extension<StreamGate>,
    Extension(tenant): Extension<Tenant>,
    Extension(caller): Extension<CallerName>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|rejection| ApiError::unreadable(rejection, runtime.limits()))?;
    let decider = Decider::new(caller.0, DecisionSource::AgUi);
    run(runtime, &gate, (tenant, decider), String::new(), &headers, &body).await
}

pub(super) async fn run_agent(
    State(runtime): State<Runtime>,
    Extension(gate): Extension<StreamGate>,
    Extension(tenant): Extension<Tenant>,
    Extension(caller): Extension<CallerName>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|rejection| ApiError::unreadable(rejection, runtime.limits()))?;
    let decider = Decider::new(caller.0, DecisionSource::AgUi);
    run(runtime, &gate, (tenant, decider), agent_id, &headers, &body).await
}

/// A request's stream, admitted by `gate` for `tenant` before anything
/// runs (or refused: 429 past the tenant's cap, 503 while the server
/// drains), counted until it ends, and ended when the drain period is over.
async fn run(
    runtime: Runtime,
    gate: &StreamGate,
    (tenant, decider): (Tenant, Decider),
    agent_id: String,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ApiError> {
    let open = gate.admit(&tenant)?;
    let encoding = Encoding::of(
        headers
            .get(header::ACCEPT)
            .and_then(|accept| accept.to_str().ok()),
    );
    let response = respond(runtime, (tenant, decider), agent_id, headers, body, encoding).await?;
    Ok(stream::guarded(gate, open, encoding, response))
}

/// Runs (or resumes) as `input` asks, for `tenant`, `decider` deciding
/// what its answers decide.
async fn respond(
    runtime: Runtime,
    (tenant, decider): (Tenant, Decider),
    agent_id: String,
    headers: &HeaderMap,
    body: &[u8],
    encoding: Encoding,
) -> Result<Response, ApiError> {
    let input = input::parse(body)?;
    let agent = runtime
        .agents()
        .get(&agent_id)
        .ok_or_else(|| RuntimeError::AgentNotFound(agent_id.clone()))?
        .clone();
    let trace =
        crate::grpc::convert::trace_context(&tonic::metadata::MetadataMap::from_headers(headers.clone()));
    let runs = match runtime.get_thread(&tenant, &input.thread_id).await {
        Ok(view) => view.runs,
        Err(RuntimeError::ThreadNotFound) => Vec::new(),
        Err(error) => return Err(error.into()),
    };
    let latest = runs.last().cloned();
    let thread_id = input.thread_id.to_string();
    if !input.resume.is_empty() {
        return resume(&runtime, (&tenant, &decider), latest, &input, trace, encoding).await;
    }
    let new = input::new_input(&input.messages, latest.is_some());
    if let Some(run) = latest.as_ref().filter(|run| waits_on_client_tools(run)) {
        if new
            .iter()
            .any(|message| matches!(message, ClientMessage::Tool { .. }))
        {
            return tool_results(&runtime, (&tenant, &decider), run, new, &input, trace, encoding).await;
        }
    }
    let messages = input::turns(new);
    let has_user_message = messages
        .iter()
        .any(|message| matches!(message, crate::domain::Message::User { .. }));
    if let Some(run) = &latest {
        let events = Events::new(thread_id.clone(), run.id, input.generation);
        if !has_user_message {
            return match replay::events(&runtime, &events, &runs) {
                Some(replayed) => Ok(stream::complete(&replayed, encoding)),
                None => Err(busy(&runtime, &thread_id, run)),
            };
        }
        if matches!(run.phase(), Phase::Running { .. } | Phase::Suspended { .. }) {
            return Err(busy(&runtime, &thread_id, run));
        }
    }
    if !has_user_message {
        return Err(ApiError::invalid_body(
            "messages".to_owned(),
            "has no new user message after the thread's history",
        ));
    }
    let start = StartRun {
        agent_id: agent.id.clone(),
        messages,
        tools: input.tools.clone(),
        thread_id: Some(input.thread_id.clone()),
        // The client's own id for the run, kept for its logs; the events
        // carry agentd's.
        metadata: [("ag_ui_run_id".to_owned(), input.client_run_id.clone())].into(),
        trace,
        decider: Some(decider),
        ..StartRun::default()
    };
    let run_stream = match runtime.start(&tenant, start).await {
        Ok(run_stream) => run_stream,
        // Another request started or suspended a run on the thread since
        // it was read: refused as that run stands.
        Err(RuntimeError::ThreadBusy { run_id, .. }) => {
            let run = runtime.get_run(&tenant, run_id).await?;
            return Err(busy(&runtime, &thread_id, &run));
        }
        Err(error) => return Err(error.into()),
    };
    let events = Events::new(thread_id, run_stream.run_id, input.generation);
    Ok(stream::response(runtime, tenant, events, run_stream, encoding))
}

/// The refusal of a new message on thread `thread_id` while its run `run`
/// runs or waits: what it waits on, with each interrupt's schema.
fn busy(runtime: &Runtime, thread_id: &str, run: &RunRecord) -> ApiError {
    let Some(pending) = pending_of(run) else {
        return ApiError::thread_busy(
            format!(
                "thread {thread_id} is busy: its run {} is {}, and a thread runs one run at a time; \
                 send the message again once it has finished",
                run.id,
                run.status()
            ),
            run.id.to_string(),
            None,
        );
    };
    let agent = runtime.agents().get(&run.agent_id).cloned();
    let expires_at = match run.phase() {
        Phase::Suspended { expires_at, .. } => Some(*expires_at),
        _ => None,
    };
    let interrupts = pending
        .iter()
        .map(|call| interrupt::interrupt(call, agent.as_deref(), expires_at))
        .collect();
    let ids: Vec<&str> = pending.iter().map(|call| call.call.id.as_str()).collect();
    let how = if pending.iter().all(interrupt::is_client_tool) {
        "send each call's result as a tool message with its toolCallId"
    } else {
        "answer every one of them in one request's resume entries (their responseSchema says how)"
    };
    ApiError::thread_busy(
        format!(
            "thread {thread_id} waits on its run {}: open interrupts {}; {how}, or send the thread \
             with no new message to have them again",
            run.id,
            ids.join(", ")
        ),
        run.id.to_string(),
        Some(interrupts),
    )
}

fn pending_of(run: &RunRecord) -> Option<&[PendingCall]> {
    match run.phase() {
        Phase::Suspended { pending, .. } => Some(pending),
        _ => None,
    }
}

fn waits_on_client_tools(run: &RunRecord) -> bool {
    pending_of(run).is_some_and(|pending| pending.iter().all(interrupt::is_client_tool))
}

/// Answers the thread's suspended run with every resume entry at once.
async fn resume(
    runtime: &Runtime,
    (tenant, decider): (&Tenant, &Decider),
    latest: Option<RunRecord>,
    input: &RunInput,
    trace: Option<crate::domain::TraceContext>,
    encoding: Encoding,
) -> Result<Response, ApiError> {
    let first = input.resume[0].interrupt_id.as_str();
    let Some(run) = latest else {
        return Err(ApiError {
            interrupt_id: Some(first.to_owned()),
            ..ApiError::from(RuntimeError::ThreadNotFound)
        });
    };
    let Some(pending) = pending_of(&run) else {
        return Err(ApiError::not_open(
            Some(first),
            format!(
                "interrupt {first} is no longer open: run {} is {}",
                run.id,
                run.status()
            ),
        ));
    };
    let mut seen = HashSet::new();
    let mut answers = Vec::new();
    let mut entries = Vec::new();
    let mut cancel = false;
    for (index, entry) in input.resume.iter().enumerate() {
        let id = entry.interrupt_id.as_str();
        if !seen.insert(id) {
            return Err(ApiError::invalid_body(
                format!("resume[{index}].interruptId"),
                format!("answers interrupt {id} a second time"),
            )
            .with_interrupt(id));
        }
        let Some(call) = pending.iter().find(|call| call.call.id == id) else {
            let open: Vec<&str> = pending.iter().map(|call| call.call.id.as_str()).collect();
            return Err(ApiError::not_open(
                Some(id),
                format!(
                    "interrupt {id} is not open: run {} waits on {}",
                    run.id,
                    open.join(", ")
                ),
            ));
        };
        let (answer, remember) = match &entry.status {
            ResumeStatus::Resolved(payload) => interrupt::answer(call, index, payload.as_ref())?,
            ResumeStatus::Cancelled => match interrupt::cancelled(call) {
                Some(answer) => (answer, None),
                None => {
                    cancel = true;
                    continue;
                }
            },
        };
        entries.push(index);
        answers.push(CallAnswer {
            tool_call_id: Some(id.to_owned()),
            answer,
            remember,
        });
    }
    if let Some(open) = pending.iter().find(|call| !seen.contains(call.call.id.as_str())) {
        let id = open.call.id.as_str();
        return Err(ApiError::invalid_body(
            "resume".to_owned(),
            format!("has no entry for open interrupt {id}: every open interrupt is answered at once"),
        )
        .with_interrupt(id));
    }
    let thread_id = input.thread_id.to_string();
    if cancel {
        let cancelled = runtime
            .cancel(
                tenant,
                run.id,
                "cancelled by the AG-UI client".to_owned(),
                decider,
            )
            .await
            .map_err(|error| not_open(error, first))?;
        let events = Events::new(thread_id, cancelled.id, input.generation);
        return Ok(stream::cancelled(&events, &cancelled, encoding));
    }
    let request = ResumeRun {
        run_id: run.id,
        answers,
        request_id: None,
        trace,
        decider: decider.clone(),
    };
    let events = Events::new(thread_id, run.id, input.generation).resuming(run.state.steps);
    continue_with(runtime, tenant, request, events, encoding, |error| {
        refused(error, &input.resume, &entries, |entry, error| {
            payload_field(entry, error)
        })
    })
    .await
}

/// Resumes a run as `request` says and streams the continuation as the
/// AG-UI events `events` makes; a refusal is what `refusal` makes of it.
async fn continue_with(
    runtime: &Runtime,
    tenant: &Tenant,
    request: ResumeRun,
    events: Events,
    encoding: Encoding,
    refusal: impl FnOnce(RuntimeError) -> ApiError,
) -> Result<Response, ApiError> {
    let run_stream = runtime.resume(tenant, request).await.map_err(refusal)?;
    Ok(stream::response(
        runtime.clone(),
        tenant.clone(),
        events,
        run_stream,
        encoding,
    ))
}

/// Answers the frontend tool calls the thread's run waits on with the
/// client's `tool` messages.
async fn tool_results(
    runtime: &Runtime,
    (tenant, decider): (&Tenant, &Decider),
    run: &RunRecord,
    new: &[ClientMessage],
    input: &RunInput,
    trace: Option<crate::domain::TraceContext>,
    encoding: Encoding,
) -> Result<Response, ApiError> {
    let pending = pending_of(run).unwrap_or_default();
    let mut answers = Vec::new();
    for call in pending {
        let id = call.call.id.as_str();
        let result = new.iter().find_map(|message| match message {
            ClientMessage::Tool {
                tool_call_id,
                content,
                is_error,
            } if tool_call_id == id => Some(interrupt::tool_result(content, *is_error)),
            _ => None,
        });
        let Some(answer) = result else {
            return Err(ApiError::invalid_body(
                "messages".to_owned(),
                format!(
                    "has no tool message with toolCallId {id}: every pending tool call is answered at once"
                ),
            )
            .with_interrupt(id));
        };
        answers.push(CallAnswer {
            tool_call_id: Some(id.to_owned()),
            answer,
            remember: None,
        });
    }
    let thread_id = input.thread_id.to_string();
    let ids: Vec<String> = pending.iter().map(|call| call.call.id.clone()).collect();
    let request = ResumeRun {
        run_id: run.id,
        answers,
        request_id: None,
        trace,
        decider: decider.clone(),
    };
    let events = Events::new(thread_id, run.id, input.generation).resuming(run.state.steps);
    continue_with(runtime, tenant, request, events, encoding, |error| match error {
        RuntimeError::InvalidAnswer(answer) => {
            let position = answer.of.as_ref().map_or(0, |(position, _)| *position);
            let id = ids.get(position).map_or("", String::as_str);
            ApiError::invalid_answer(id, "messages".to_owned(), answer_message(&answer))
        }
        other => not_open(other, ids.first().map_or("", String::as_str)),
    })
    .await
}

/// A refused Resume, naming the entry and interrupt at fault.
fn refused(
    error: RuntimeError,
    resume: &[input::ResumeEntry],
    entries: &[usize],
    field: impl Fn(usize, &crate::domain::AnswerError) -> String,
) -> ApiError {
    match error {
        RuntimeError::InvalidAnswer(answer) => {
            let position = answer.of.as_ref().map_or(0, |(position, _)| *position);
            let entry = entries.get(position).copied().unwrap_or_default();
            let id = resume.get(entry).map_or("", |entry| entry.interrupt_id.as_str());
            ApiError::invalid_answer(id, field(entry, &answer), answer_message(&answer))
        }
        other => not_open(
            other,
            resume.first().map_or("", |entry| entry.interrupt_id.as_str()),
        ),
    }
}

/// A runtime error, naming `interrupt_id` when the interrupt is no longer
/// open.
fn not_open(error: RuntimeError, interrupt_id: &str) -> ApiError {
    let error = ApiError::from(error);
    if error.status == axum::http::StatusCode::CONFLICT {
        error.with_interrupt(interrupt_id)
    } else {
        error
    }
}
