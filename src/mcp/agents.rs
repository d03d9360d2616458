//! The MCP server handler: each agent is a tool named by its id, taking
//! `{prompt, thread_id?}`. A call starts a run and follows it; when the
//! run suspends, the client is asked as its protocol generation allows:
//! an input-required result (2026-07-28), `elicitation/create` on the
//! live request (earlier generations), or, for a client that cannot be
//! asked, a result that says the question, the run and how to answer it.
//! Answers go through the runtime's Resume, so they are checked as every
//! surface's are, and the first answer from any surface wins: a call
//! waiting on its question follows the run and continues with an answer
//! given elsewhere. Only the runtime API is used.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelledNotification, CancelledNotificationParam, ClientResult,
    ElicitRequest, ElicitResult, ErrorData, Implementation, InputRequest, InputRequiredResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, ServerNotification,
    ServerRequest, Tool,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{RoleServer, ServerHandler};
use serde_json::{json, Value};

use super::follow::{self, Progress};
use super::follow::{not_accepted, noted, waiting};
use super::question::{Question, Reply};
use super::state::{Asked, StateSeal};
use super::withdrawn::{became, session_of, Withdrawn};
use crate::domain::{
    Answer, Decider, DecisionSource, Message, PendingCall, RunId, RunRecord, RunStatus, Tenant, ThreadId,
};
use crate::door::CallerName;
use crate::runtime::{CallAnswer, ResumeRun, RunStream, Runtime, RuntimeError, StartRun};

/// The key of the one input request of an input-required result.
const INPUT: &str = "answer";

/// How many times a live request asks a question whose answers are
/// refused, before it says so and leaves the question waiting.
const ASKS: usize = 3;

/// The first protocol generation that asks with input-required results.
const INPUT_REQUIRED_VERSION: &str = "2026-07-28";

/// agentd's agents as MCP tools. One per session (cheap to clone).
#[derive(Clone)]
pub(super) struct Agents {
    runtime: Runtime,
    seal: StateSeal,
    withdrawn: Withdrawn,
}

/// How the client of a call can be asked a question.
enum Asking {
    /// An input-required result (2026-07-28 with elicitation).
    InputRequired,
    /// `elicitation/create` on the live request.
    Elicitation,
    /// Not at all: it gets the question as text.
    Text,
}

/// Where a call goes next.
enum Step {
    /// A stream of the run to follow.
    Follow(RunStream),
    /// The answer was refused, for this reason: the question is asked
    /// again.
    Refused(String),
    /// A stream of the run to follow, after an answer given elsewhere
    /// first, and what the person is told of it.
    Elsewhere(RunStream, String),
    /// The call's result.
    Done(CallToolResponse),
}

fn invalid_params(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

/// A runtime error the request itself caused, as JSON-RPC's error.
fn request_error(error: RuntimeError) -> ErrorData {
    match error {
        RuntimeError::AgentNotFound(_) | RuntimeError::InvalidRequest { .. } | RuntimeError::RunNotFound => {
            invalid_params(error.to_string())
        }
        other => ErrorData::internal_error(other.to_string(), None),
    }
}

/// Who makes this request, as the decider of what it decides: the name
/// the authentication layer found, through MCP.
fn decider_of(context: &RequestContext<RoleServer>) -> Decider {
    let name = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<CallerName>())
        .map(|CallerName(name)| name.clone())
        .unwrap_or_default();
    Decider::new(name, DecisionSource::Mcp)
}

/// The tenant the authentication layer found for this request.
fn tenant_of(context: &RequestContext<RoleServer>) -> Tenant {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Tenant>())
        .cloned()
        .unwrap_or_default()
}

fn asking(context: &RequestContext<RoleServer>) -> Asking {
    let elicitation = context
        .client_capabilities()
        .and_then(|capabilities| capabilities.elicitation)
        // A client that declares only url mode cannot fill a form.
        .is_some_and(|modes| modes.form.is_some() || modes.url.is_none());
    let modern = context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= INPUT_REQUIRED_VERSION);
    match (elicitation, modern) {
        (false, _) => Asking::Text,
        (true, true) => Asking::InputRequired,
        (true, false) => Asking::Elicitation,
    }
}

/// The input schema every agent's tool takes.
fn input_schema() -> Arc<serde_json::Map<String, Value>> {
    let schema = json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "What to ask the agent"},
            "thread_id": {
                "type": "string",
                "description": "A thread to continue (its earlier runs are the conversation so far)",
            },
        },
        "required": ["prompt"],
    });
    match schema {
        Value::Object(schema) => Arc::new(schema),
        _ => unreachable!("an object"),
    }
}

impl Agents {
    pub(super) fn new(runtime: Runtime, seal: StateSeal, withdrawn: Withdrawn) -> Self {
        Self {
            runtime,
            seal,
            withdrawn,
        }
    }

    /// The run a call starts, from its arguments.
    fn start_run(
        agent_id: &str,
        arguments: Option<&serde_json::Map<String, Value>>,
    ) -> Result<StartRun, ErrorData> {
        let empty = serde_json::Map::new();
        let arguments = arguments.unwrap_or(&empty);
        let prompt = match arguments.get("prompt") {
            Some(Value::String(prompt)) if !prompt.trim().is_empty() => prompt.clone(),
            _ => return Err(invalid_params("prompt: a non-empty string is required")),
        };
        let thread_id = match arguments.get("thread_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => {
                Some(ThreadId::new(id).map_err(|error| invalid_params(format!("thread_id: {error}")))?)
            }
            Some(_) => return Err(invalid_params("thread_id: a string")),
        };
        Ok(StartRun {
            agent_id: agent_id.to_owned(),
            messages: vec![Message::user(prompt)],
            max_steps: 0,
            require_tool_approval: false,
            cancel_on_disconnect: false,
            suspend_ttl: None,
            metadata: BTreeMap::from([("source".to_owned(), "mcp".to_owned())]),
            request_id: None,
            tools: Vec::new(),
            thread_id,
            auto_resume: false,
            trace: None,
            run_id: None,
            decider: None,
        })
    }

    async fn get_run(&self, tenant: &Tenant, id: RunId) -> Result<RunRecord, ErrorData> {
        self.runtime.get_run(tenant, id).await.map_err(request_error)
    }

    /// The run after the question `asked` (answered, it seems, elsewhere):
    /// its stream from there.
    async fn after(&self, tenant: &Tenant, asked: &Asked) -> Result<Step, ErrorData> {
        let stream = self
            .runtime
            .subscribe(tenant, asked.run, asked.seq)
            .await
            .map_err(request_error)?;
        Ok(Step::Follow(stream))
    }

    /// The run after the question `asked`, which was answered elsewhere
    /// before the client's answer came: its stream from there, and the
    /// client's answer said to be unused.
    async fn too_late(&self, tenant: &Tenant, asked: &Asked) -> Result<Step, ErrorData> {
        let run = self.get_run(tenant, asked.run).await?;
        let what = format!(
            "This answer was not used: {}.",
            became(&run, &asked.call, "before it came")
        );
        match self.after(tenant, asked).await? {
            Step::Follow(stream) => Ok(Step::Elsewhere(stream, what)),
            step => Ok(step),
        }
    }

    /// Withdraws the form of `elicitation/create` request `id`, whose
    /// question was answered elsewhere: the client is sent
    /// `notifications/cancelled` for it (so a host closes the form), and
    /// an answer that still comes is refused with `what` happened.
    async fn withdraw(&self, context: &RequestContext<RoleServer>, id: rmcp::model::RequestId, what: &str) {
        let session = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| session_of(&parts.headers))
            .unwrap_or_default();
        if let Ok(key) = serde_json::to_value(&id) {
            self.withdrawn.withdraw(session, key, what.to_owned());
        }
        let cancelled =
            CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(what.to_owned())));
        if let Err(error) = context
            .peer
            .send_notification(ServerNotification::from(cancelled))
            .await
        {
            tracing::debug!(%error, "the withdrawal of an MCP form could not be sent");
        }
    }

    /// Acts on the client's `reply` to the question `asked`.
    async fn answer(
        &self,
        tenant: &Tenant,
        decider: &Decider,
        asked: &Asked,
        reply: Reply,
    ) -> Result<Step, ErrorData> {
        let (answer, remember) = match reply {
            Reply::Answer(answer, remember) => (answer, remember),
            Reply::Declined => (Answer::Declined, None),
            Reply::Cancelled => {
                return match self
                    .runtime
                    .cancel(
                        tenant,
                        asked.run,
                        "cancelled by the MCP client".to_owned(),
                        decider,
                    )
                    .await
                {
                    Ok(run) => Ok(Step::Done(follow::ended(&run, &follow::Seen::default()).into())),
                    // Answered elsewhere first: the run goes on with that.
                    Err(RuntimeError::NotCancellable(_)) => self.too_late(tenant, asked).await,
                    Err(error) => Err(request_error(error)),
                };
            }
        };
        let resume = ResumeRun {
            run_id: asked.run,
            answers: vec![CallAnswer {
                tool_call_id: Some(asked.call.clone()),
                answer,
                remember,
            }],
            request_id: None,
            trace: None,
            decider: decider.clone(),
        };
        match self.runtime.resume(tenant, resume).await {
            Ok(stream) => Ok(Step::Follow(stream)),
            Err(RuntimeError::InvalidAnswer(error)) => Ok(Step::Refused(error.to_string())),
            // Another surface answered first: follow the run on.
            Err(
                RuntimeError::NotSuspended(_)
                | RuntimeError::ResumeConflict
                | RuntimeError::ToolCallNotPending { .. },
            ) => self.too_late(tenant, asked).await,
            Err(error) => Err(request_error(error)),
        }
    }

    /// Asks the client `pending`'s question of the suspended `run`, as it
    /// can be asked; after a `refusal` of its answer, with the reason. A
    /// refused answer in a live request is asked again, [`ASKS`] times in
    /// all; a 2026-07-28 client's retry is answered with the question
    /// again.
    async fn ask(
        &self,
        tenant: &Tenant,
        run: &RunRecord,
        pending: &PendingCall,
        context: &RequestContext<RoleServer>,
        mut refusal: Option<String>,
    ) -> Result<Step, ErrorData> {
        let asked = Asked {
            run: run.id,
            call: pending.call.id.clone(),
            seq: run.last_seq(),
        };
        let question = Question::of(run, pending);
        let (question, how) = match (question, asking(context)) {
            (Some(question), how @ (Asking::InputRequired | Asking::Elicitation)) => (question, how),
            (question, _) => return Ok(Step::Done(waiting(run, pending, question.as_ref()).into())),
        };
        if let Asking::InputRequired = how {
            let request =
                InputRequest::Elicitation(ElicitRequest::new(question.elicitation(refusal.as_deref())));
            let result = InputRequiredResult::new(
                Some(BTreeMap::from([(INPUT.to_owned(), request)])),
                Some(self.seal.seal(tenant, &asked)),
            );
            return Ok(Step::Done(result.into()));
        }
        // The question is answered here or elsewhere, whichever comes
        // first.
        let mut answered = self
            .runtime
            .subscribe(tenant, run.id, asked.seq)
            .await
            .map_err(request_error)?;
        let failed = |error: &dyn std::fmt::Display| {
            ErrorData::internal_error(
                format!(
                    "asking the client failed: {error}; run {} still waits for an answer",
                    run.id
                ),
                None,
            )
        };
        for _ in 0..ASKS {
            let params = question.elicitation(refusal.as_deref());
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
            let elicitation = context
                .peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
                .map_err(|error| failed(&error))?;
            let id = elicitation.id.clone();
            let step = tokio::select! {
                result = elicitation.await_response() => match result {
                    Ok(ClientResult::ElicitResult(result)) => match question.reply(&result) {
                        Ok(reply) => self.answer(tenant, &decider_of(context), &asked, reply).await?,
                        Err(error) => Step::Refused(error.to_string()),
                    },
                    Ok(_) => return Err(failed(&"the client answered with something other than an elicitation result")),
                    Err(error) => return Err(failed(&error)),
                },
                () = answered.first_chunks() => {
                    // Answered (or ended) elsewhere: the host's form is
                    // withdrawn, and the call follows the run on.
                    let now = self.get_run(tenant, run.id).await?;
                    let what = format!(
                        "The form was withdrawn: {}",
                        became(&now, &asked.call, "while the form was open")
                    );
                    self.withdraw(context, id, &what).await;
                    return Ok(Step::Elsewhere(answered, format!("{what}.")));
                }
                () = context.ct.cancelled() => return Err(ErrorData::internal_error(
                    format!("the request was cancelled; run {} still waits for an answer", run.id),
                    None,
                )),
            };
            match step {
                Step::Refused(why) => refusal = Some(why),
                step => return Ok(step),
            }
        }
        let why = refusal.unwrap_or_default();
        Ok(Step::Done(not_accepted(run, &why)))
    }

    /// Follows `stream` and the run's next streams until the run ends or
    /// the client must be asked in a later request.
    /// `notes` are what the person is told first in the call's result.
    async fn drive(
        &self,
        tenant: &Tenant,
        mut stream: RunStream,
        mut notes: Vec<String>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut progress = Progress::new(context.peer.clone(), context.meta.get_progress_token());
        loop {
            let id = stream.run_id;
            let seen = follow::follow(stream, &mut progress).await;
            let run = self.get_run(tenant, id).await?;
            if run.status() != RunStatus::Suspended {
                return Ok(noted(follow::ended(&run, &seen).into(), notes));
            }
            let Some(pending) = run.pending().first().cloned() else {
                return Ok(noted(follow::ended(&run, &seen).into(), notes));
            };
            match self.ask(tenant, &run, &pending, context, None).await? {
                Step::Follow(next) => stream = next,
                Step::Elsewhere(next, note) => {
                    notes.push(note);
                    stream = next;
                }
                Step::Done(response) => return Ok(noted(response, notes)),
                Step::Refused(why) => return Ok(noted(not_accepted(&run, &why), notes)),
            }
        }
    }

    /// A retried call that carries the answer to an input-required result.
    async fn retried(
        &self,
        tenant: &Tenant,
        request: &CallToolRequestParams,
        sealed: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let asked = self
            .seal
            .open(tenant, sealed)
            .map_err(|error| invalid_params(error.to_string()))?;
        let run = self.get_run(tenant, asked.run).await?;
        let response = request
            .input_responses
            .as_ref()
            .and_then(|responses| responses.get(INPUT));
        let step = match response {
            // Without an answer: asked again (or followed, if answered).
            None if run.status() == RunStatus::Suspended => {
                let pending = run
                    .pending()
                    .iter()
                    .find(|pending| pending.call.id == asked.call)
                    .cloned();
                match pending {
                    Some(pending) => self.ask(tenant, &run, &pending, context, None).await?,
                    None => self.after(tenant, &asked).await?,
                }
            }
            None => self.after(tenant, &asked).await?,
            Some(response) => {
                let result: ElicitResult = serde_json::from_value(response.clone())
                    .map_err(|error| invalid_params(format!("inputResponses.{INPUT}: {error}")))?;
                let pending = run.pending().iter().find(|pending| pending.call.id == asked.call);
                let question = pending.and_then(|pending| Some((pending, Question::of(&run, pending)?)));
                match question {
                    Some((pending, question)) => {
                        let step = match question.reply(&result) {
                            Ok(reply) => self.answer(tenant, &decider_of(context), &asked, reply).await?,
                            Err(error) => Step::Refused(error.to_string()),
                        };
                        // A refused answer: the question again, with why.
                        match step {
                            Step::Refused(why) => self.ask(tenant, &run, pending, context, Some(why)).await?,
                            step => step,
                        }
                    }
                    // Answered elsewhere meanwhile: the answer is too
                    // late, and the call says what the run became.
                    None => self.too_late(tenant, &asked).await?,
                }
            }
        };
        match step {
            Step::Follow(stream) => self.drive(tenant, stream, Vec::new(), context).await,
            Step::Elsewhere(stream, note) => self.drive(tenant, stream, vec![note], context).await,
            Step::Done(response) => Ok(response),
            Step::Refused(why) => Ok(not_accepted(&run, &why)),
        }
    }
}

impl ServerHandler for Agents {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agentd", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool is an agent: call it with a prompt. An agent may ask a question \
                 before it answers; it is asked through elicitation.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = input_schema();
        let tools = self
            .runtime
            .agents()
            .iter()
            .map(|(agent, _)| Tool::new(agent.id.clone(), agent.description.clone(), schema.clone()))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // Its response stream holds the call's place in the stream gate
        // (`streams.rs`) until the call returns.
        let tenant = tenant_of(&context);
        if self.runtime.agents().get(&request.name).is_none() || request.name.is_empty() {
            return Err(invalid_params(format!(
                "no tool {:?}: each agent is a tool",
                request.name
            )));
        }
        if let Some(sealed) = request.request_state.clone() {
            return self.retried(&tenant, &request, &sealed, &context).await;
        }
        let start = Self::start_run(&request.name, request.arguments.as_ref())?;
        let stream = self.runtime.start(&tenant, start).await.map_err(request_error)?;
        self.drive(&tenant, stream, Vec::new(), &context).await
    }
}
