//! A call of an MCP tool, from its request to its result, through the
//! requests for input its server makes on the way. Each request suspends
//! the run (inside one; outside any run it is answered `cancel`), and the
//! answer takes the call up again:
//!
//! - 2026-07-28: the server answers `tools/call` with an input-required
//!   result. Its requests and `requestState` are stored with the
//!   suspension ([`Continuation::InputRequired`]); the requests are put to
//!   the person one at a time, then the call is retried with all the
//!   responses and the state, by whichever replica has the last answer,
//!   after any restart.
//! - 2025-06-18 / 2025-11-25: the server sends `elicitation/create` on the
//!   live session while the call is in flight. The request stays open while
//!   the run is suspended ([`Continuation::Live`] names the call), and the
//!   answer is its response; when the session ended meanwhile (a restart,
//!   another replica, the server's own timeout) the model is told so.
//! - A server that answers the call with "URL elicitation required"
//!   (`-32042`, 2025-11-25): each page it names is put to the person as a
//!   URL question ([`Continuation::UrlRequired`]); once every one is
//!   accepted the call is made again, as the error asks; a decline or a
//!   cancel ends it with what the person did.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, ElicitResult, InputRequest, InputRequiredResult};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::client::{CallError, Event, Leg, Waiting};
use super::connection::Connection;
use super::{content, elicitation};
use crate::domain::{
    Answer, Elicitation, ElicitationAction, ElicitationResponse, SuspendPayload, ToolOutput,
};
use crate::tools::{ToolContext, ToolOutcome};

/// Input-required results in a row that carry only a state (a server
/// asking to be called again later) before the call gives up.
const MAX_STATE_ROUNDS: u32 = 10;

/// Where a call suspended on a request for input goes on from: stored in
/// the suspension's payload (`Elicitation::continuation`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "protocol", rename_all = "snake_case")]
enum Continuation {
    /// 2026-07-28: retry the call with the responses to `requests` and
    /// `request_state`, once every request has its response; `asking` is
    /// the key of the request the person is answering.
    InputRequired {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_state: Option<String>,
        requests: BTreeMap<String, Value>,
        asking: String,
        #[serde(default)]
        responses: BTreeMap<String, Value>,
    },
    /// 2025 generation: the request of the call `call` waits for its
    /// response on this process's live session.
    Live { call: String },
    /// The server refused the call until the person opens the pages of
    /// `requests` (URL elicitations, `-32042`); `asking` is the index of
    /// the one the person is answering. Once all are accepted the call is
    /// made again.
    UrlRequired { requests: Vec<Value>, asking: usize },
}

/// One call of `tool` on `connection`, as its tool makes it.
pub(super) struct Call<'a> {
    pub(super) connection: &'a Connection,
    pub(super) tool: &'a str,
    pub(super) timeout: Duration,
    pub(super) ctx: ToolContext,
}

impl Call<'_> {
    fn server(&self) -> &str {
        self.connection.name()
    }

    /// Calls the tool with `args`.
    pub(super) async fn start(&self, args: &Value) -> ToolOutcome {
        let mut params = CallToolRequestParams::new(self.tool.to_owned());
        if let Value::Object(arguments) = args {
            params = params.with_arguments(arguments.clone());
        }
        self.send(params, 0).await
    }

    /// Goes on with the call after `answer` to its request for input,
    /// which `payload` carries.
    pub(super) async fn proceed(
        &self,
        args: &Value,
        payload: &SuspendPayload,
        answer: &Answer,
    ) -> ToolOutcome {
        let (SuspendPayload::Elicitation(asked), Answer::Elicitation(response)) = (payload, answer) else {
            return self
                .done_error("the answer is not a response to the server's request for input".to_owned());
        };
        match serde_json::from_value::<Continuation>(asked.continuation.clone()) {
            Ok(Continuation::Live { call }) => self.answer_live(&call, response).await,
            Ok(Continuation::UrlRequired { requests, asking }) => match response.action {
                ElicitationAction::Accept if asking + 1 < requests.len() => {
                    self.ask_url(requests, asking + 1)
                }
                ElicitationAction::Accept => self.start(args).await,
                action => self.done_error(format!(
                    "the call needs the person to open a page first ({}), and they answered {}: \
                     the call was not made",
                    url_of(&requests, asking),
                    action.as_str()
                )),
            },
            Ok(Continuation::InputRequired {
                request_state,
                requests,
                asking,
                mut responses,
            }) => {
                let sent = serde_json::to_value(elicitation::result(response)).unwrap_or(Value::Null);
                responses.insert(asking, sent);
                self.answer_input_required(args, request_state, requests, responses, 0)
                    .await
            }
            Err(error) => self.done_error(format!("its request for input cannot be taken up: {error}")),
        }
    }

    /// Sends `params` (a call, or its retry) and follows it; `state_rounds`
    /// counts the state-only input-required results before it.
    async fn send(&self, params: CallToolRequestParams, state_rounds: u32) -> ToolOutcome {
        let args = params.arguments.clone().map(Value::Object).unwrap_or(json!({}));
        let attempt = Attempt::of(&params);
        match self.connection.call(params) {
            Ok(leg) => self.follow(leg, &args, state_rounds, attempt).await,
            Err(error) => ToolOutcome::Done(self.failure(error, attempt)),
        }
    }

    /// Follows `leg` to its end or its next request for input.
    async fn follow(&self, mut leg: Leg, args: &Value, state_rounds: u32, attempt: Attempt) -> ToolOutcome {
        loop {
            match leg.next(self.timeout).await {
                Event::Ended(Ok(CallToolResponse::Complete(result))) => {
                    return ToolOutcome::Done(content::to_output(result))
                }
                Event::Ended(Ok(CallToolResponse::InputRequired(required))) => {
                    return Box::pin(self.input_required(args, required, state_rounds)).await
                }
                Event::Ended(Ok(_)) => {
                    return self
                        .done_error("it made the call a task, which agentd does not follow".to_owned())
                }
                Event::Ended(Err(CallError::UrlRequired { message, requests })) if self.ctx.can_suspend() => {
                    tracing::info!(server = %self.server(), %message, "an MCP server requires a URL elicitation");
                    return self.ask_url(requests, 0);
                }
                Event::Ended(Err(error)) => return ToolOutcome::Done(self.failure(error, attempt)),
                Event::Asked { request, reply } => {
                    if !self.ctx.can_suspend() {
                        self.reply_live(&leg.id, reply, nobody_answers());
                        continue;
                    }
                    let continuation = Continuation::Live { call: leg.id.clone() };
                    match self.asked(request, &continuation) {
                        Ok(payload) => {
                            self.connection.calls().suspend(Waiting { reply, leg });
                            return ToolOutcome::Suspend(payload);
                        }
                        Err(why) => {
                            tracing::warn!(server = %self.server(), %why, "an MCP server's request for input was refused");
                            self.reply_live(&leg.id, reply, nobody_answers());
                        }
                    }
                }
            }
        }
    }

    /// Answers the request of the call `id` that waits on the live session
    /// with `response`, and follows the call from there.
    async fn answer_live(&self, id: &str, response: &ElicitationResponse) -> ToolOutcome {
        let unanswered = || {
            self.done_error(
                "its request for input ended unanswered: the session it was made on is gone \
                 (agentd restarted, another replica took the answer, or the server stopped waiting)"
                    .to_owned(),
            )
        };
        let Some(Waiting { reply, leg }) = self.connection.calls().take(id) else {
            return unanswered();
        };
        if reply.send(elicitation::result(response)).is_err() {
            return unanswered();
        }
        self.connection.calls().answered(id);
        let args = json!({});
        self.follow(leg, &args, 0, Attempt::First).await
    }

    /// Answers `cancel` to the request of the call `payload` suspended on,
    /// if it waits on this process's live session.
    pub(super) fn abandon(connection: &Connection, payload: &SuspendPayload) {
        let SuspendPayload::Elicitation(asked) = payload else {
            return;
        };
        if let Ok(Continuation::Live { call }) = serde_json::from_value(asked.continuation.clone()) {
            if let Some(Waiting { reply, .. }) = connection.calls().take(&call) {
                let _ = reply.send(nobody_answers());
                connection.calls().answered(&call);
            }
        }
    }

    fn reply_live(&self, id: &str, reply: tokio::sync::oneshot::Sender<ElicitResult>, result: ElicitResult) {
        let _ = reply.send(result);
        self.connection.calls().answered(id);
    }

    /// A 2026-07-28 input-required result: its first request for input is
    /// put to the person (or, outside a run, every request is answered
    /// `cancel`), or, with none, the call is retried with its state.
    async fn input_required(
        &self,
        args: &Value,
        required: InputRequiredResult,
        state_rounds: u32,
    ) -> ToolOutcome {
        let mut requests = BTreeMap::new();
        let mut responses = BTreeMap::new();
        for (key, request) in required.input_requests.unwrap_or_default() {
            match request {
                InputRequest::Elicitation(request) => {
                    let request = serde_json::to_value(&request.params).unwrap_or(Value::Null);
                    requests.insert(key, request);
                }
                // agentd declares no roots: it shares none.
                InputRequest::ListRoots(_) => {
                    responses.insert(key, json!({"roots": []}));
                }
                _ => {
                    return self.done_error(
                        "it asked agentd to sample a model, which agentd does not offer to MCP servers"
                            .to_owned(),
                    )
                }
            }
        }
        let state_rounds = if requests.is_empty() {
            if state_rounds >= MAX_STATE_ROUNDS {
                return self.done_error(format!(
                    "it asked to be called again {MAX_STATE_ROUNDS} times in a row without asking anything"
                ));
            }
            state_rounds + 1
        } else {
            0
        };
        if !self.ctx.can_suspend() {
            for key in requests.keys() {
                responses.insert(
                    key.clone(),
                    serde_json::to_value(nobody_answers()).unwrap_or(Value::Null),
                );
            }
        }
        self.answer_input_required(args, required.request_state, requests, responses, state_rounds)
            .await
    }

    /// The next request of `requests` without a response, put to the
    /// person; when every one has its response, the call's retry.
    async fn answer_input_required(
        &self,
        args: &Value,
        request_state: Option<String>,
        requests: BTreeMap<String, Value>,
        responses: BTreeMap<String, Value>,
        state_rounds: u32,
    ) -> ToolOutcome {
        let next = requests.iter().find(|(key, _)| !responses.contains_key(*key));
        if let Some((key, request)) = next {
            let request = match serde_json::from_value(request.clone()) {
                Ok(request) => request,
                Err(error) => {
                    return self.done_error(format!("its request for input cannot be read: {error}"))
                }
            };
            let continuation = Continuation::InputRequired {
                request_state,
                asking: key.clone(),
                requests: requests.clone(),
                responses,
            };
            return match self.asked(request, &continuation) {
                Ok(payload) => ToolOutcome::Suspend(payload),
                Err(why) => self.done_error(format!("its request for input was refused: {why}")),
            };
        }
        let mut params = CallToolRequestParams::new(self.tool.to_owned());
        if let Value::Object(arguments) = args {
            params = params.with_arguments(arguments.clone());
        }
        params.input_responses = (!responses.is_empty()).then_some(responses);
        params.request_state = request_state;
        if state_rounds > 0 {
            // The server asked to be called again: not at once.
            tokio::time::sleep(Duration::from_millis(100) * state_rounds).await;
        }
        Box::pin(self.send(params, state_rounds)).await
    }

    /// Puts URL request `asking` of `requests` (of a `-32042` error) to
    /// the person.
    fn ask_url(&self, requests: Vec<Value>, asking: usize) -> ToolOutcome {
        let request = match requests.get(asking).cloned().map(serde_json::from_value) {
            Some(Ok(request @ rmcp::model::ElicitRequestParams::UrlElicitationParams { .. })) => request,
            Some(Ok(_)) => {
                return self.done_error("it required a URL elicitation that has no URL".to_owned())
            }
            Some(Err(error)) => {
                return self.done_error(format!("its required URL elicitation cannot be read: {error}"))
            }
            None => return self.done_error("it required a URL elicitation it did not give".to_owned()),
        };
        let continuation = Continuation::UrlRequired { requests, asking };
        match self.asked(request, &continuation) {
            Ok(payload) => ToolOutcome::Suspend(payload),
            Err(why) => self.done_error(format!("its request for input was refused: {why}")),
        }
    }

    /// The payload of a suspension on `request`, going on from
    /// `continuation`.
    fn asked(
        &self,
        request: rmcp::model::ElicitRequestParams,
        continuation: &Continuation,
    ) -> Result<SuspendPayload, String> {
        let continuation = serde_json::to_value(continuation).map_err(|e| e.to_string())?;
        let asked: Elicitation = elicitation::asked(self.server(), request, continuation)?;
        Ok(SuspendPayload::Elicitation(asked))
    }

    fn done_error(&self, why: String) -> ToolOutcome {
        ToolOutcome::Done(ToolOutput::error(format!("MCP server {}: {why}", self.server())))
    }

    /// The result the model sees for an attempt that got no result.
    fn failure(&self, error: CallError, attempt: Attempt) -> ToolOutput {
        let server = self.server();
        match error {
            CallError::Unavailable => ToolOutput::error(format!("MCP server {server} is unavailable")),
            CallError::TimedOut => ToolOutput::error(format!(
                "MCP server {server} did not answer within {} ms",
                self.timeout.as_millis()
            )),
            CallError::Refused(message) if attempt == Attempt::Retry => ToolOutput::error(format!(
                "MCP server {server} refused the call: {message} (it refused to go on after its \
                 request for input was answered: the state it gave may have expired)"
            )),
            CallError::Refused(message) => {
                ToolOutput::error(format!("MCP server {server} refused the call: {message}"))
            }
            CallError::UrlRequired { message, requests } => ToolOutput::error(format!(
                "MCP server {server} refused the call: {message} (the person must open {} first, \
                 and nobody can be asked outside a run)",
                url_of(&requests, 0)
            )),
            CallError::Failed(message) => {
                ToolOutput::error(format!("MCP call to {server} failed: {message}"))
            }
        }
    }
}

/// Which attempt of a call a request is: its first, or a retry with the
/// responses to its requests for input (2026-07-28), which a server may
/// refuse for a state it no longer honours (it expired, or the server
/// restarted with a new key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Attempt {
    First,
    Retry,
}

impl Attempt {
    fn of(params: &CallToolRequestParams) -> Self {
        if params.request_state.is_some() || params.input_responses.is_some() {
            Attempt::Retry
        } else {
            Attempt::First
        }
    }
}

/// The URL of request `index` of a `-32042` error's `requests`.
fn url_of(requests: &[Value], index: usize) -> String {
    requests
        .get(index)
        .and_then(|request| request.get("url"))
        .and_then(Value::as_str)
        .unwrap_or("a page")
        .to_owned()
}

/// The response to a request for input that no person can answer (a call
/// outside any run).
fn nobody_answers() -> ElicitResult {
    elicitation::result(&ElicitationResponse {
        action: ElicitationAction::Cancel,
        content: None,
    })
}
