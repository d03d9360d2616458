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
    CallToolRequestParams, CallToolResponse, ElicitResult, ErrorData, Implementation, InputRequest,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde_json::{json, Value};

use super::follow::{self, Progress};
use super::question::{Question, Reply};
use super::state::{Asked, StateSeal};
use crate::domain::{
    Answer, Decider, DecisionSource, Message, PendingCall, RunId, RunRecord, RunStatus, Tenant, ThreadId,
};
use crate::grpc::caller::CallerName;
use crate::runtime::{CallAnswer, ResumeRun, RunStream, Runtime, RuntimeError, StartRun};

/// The key of the one input request of an input-required result.
const INPUT: &str = "answer";

/// The first protocol generation that asks with input-required results.
const INPUT_REQUIRED_VERSION: &str = "2026-07-28";

/// agentd's agents as MCP tools. One per session (cheap to clone).
#[derive(Clone)]
pub struct Agents {
    runtime: Runtime,
    seal: StateSeal,
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
    pub fn new(runtime: Runtime, seal: StateSeal) -> Self {
        Self { runtime, seal }
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
                    Err(RuntimeError::NotCancellable(_)) => self.after(tenant, asked).await,
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
            Err(RuntimeError::InvalidAnswer(error)) => {
                let run = self.get_run(tenant, asked.run).await?;
                Ok(Step::Done(not_accepted(&run, &error)))
            }
            // Another surface answered first: follow the run on.
            Err(
                RuntimeError::NotSuspended(_)
                | RuntimeError::ResumeConflict
                | RuntimeError::ToolCallNotPending { .. },
            ) => self.after(tenant, asked).await,
            Err(error) => Err(request_error(error)),
        }
    }

    /// Asks the client `pending`'s question of the suspended `run`, as it
    /// can be asked.
    async fn ask(
        &self,
        tenant: &Tenant,
        run: &RunRecord,
        pending: &PendingCall,
        context: &RequestContext<RoleServer>,
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
            let request = InputRequest::Elicitation(rmcp::model::ElicitRequest::new(question.elicitation()));
            let result = InputRequiredResult::new(
                Some(BTreeMap::from([(INPUT.to_owned(), request)])),
                Some(self.seal.seal(tenant, &asked)),
            );
            return Ok(Step::Done(result.into()));
        }
        // The question is answered here or elsewhere, whichever comes
        // first.
        let mut elsewhere = self
            .runtime
            .subscribe(tenant, run.id, asked.seq)
            .await
            .map_err(request_error)?;
        let elicitation = context.peer.create_elicitation(question.elicitation());
        tokio::select! {
            result = elicitation => match result {
                Ok(result) => match question.reply(&result) {
                    Ok(reply) => self.answer(tenant, &decider_of(context), &asked, reply).await,
                    Err(error) => Ok(Step::Done(not_accepted(run, &error))),
                },
                Err(error) => Err(ErrorData::internal_error(
                    format!("asking the client failed: {error}; run {} still waits for an answer", run.id),
                    None,
                )),
            },
            () = elsewhere.first_chunks() => Ok(Step::Follow(elsewhere)),
            () = context.ct.cancelled() => Err(ErrorData::internal_error(
                format!("the request was cancelled; run {} still waits for an answer", run.id),
                None,
            )),
        }
    }

    /// Follows `stream` and the run's next streams until the run ends or
    /// the client must be asked in a later request.
    async fn drive(
        &self,
        tenant: &Tenant,
        mut stream: RunStream,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut progress = Progress::new(context.peer.clone(), context.meta.get_progress_token());
        loop {
            let id = stream.run_id;
            let seen = follow::follow(stream, &mut progress).await;
            let run = self.get_run(tenant, id).await?;
            if run.status() != RunStatus::Suspended {
                return Ok(follow::ended(&run, &seen).into());
            }
            let Some(pending) = run.pending().first().cloned() else {
                return Ok(follow::ended(&run, &seen).into());
            };
            match self.ask(tenant, &run, &pending, context).await? {
                Step::Follow(next) => stream = next,
                Step::Done(response) => return Ok(response),
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
                    Some(pending) => self.ask(tenant, &run, &pending, context).await?,
                    None => self.after(tenant, &asked).await?,
                }
            }
            None => self.after(tenant, &asked).await?,
            Some(response) => {
                let result: ElicitResult = serde_json::from_value(response.clone())
                    .map_err(|error| invalid_params(format!("inputResponses.{INPUT}: {error}")))?;
                let pending = run.pending().iter().find(|pending| pending.call.id == asked.call);
                match pending.and_then(|pending| Question::of(&run, pending)) {
                    Some(question) => match question.reply(&result) {
                        Ok(reply) => self.answer(tenant, &decider_of(context), &asked, reply).await?,
                        Err(error) => Step::Done(not_accepted(&run, &error)),
                    },
                    // Answered elsewhere meanwhile.
                    None => self.after(tenant, &asked).await?,
                }
            }
        };
        match step {
            Step::Follow(stream) => self.drive(tenant, stream, context).await,
            Step::Done(response) => Ok(response),
        }
    }
}

/// The result of an answer Resume refused: the reason, and that `run`
/// still waits.
fn not_accepted(run: &RunRecord, error: &dyn std::fmt::Display) -> CallToolResponse {
    let text = format!(
        "The answer was not accepted ({error}). Run {} still waits for an answer: call this tool \
         again to be asked again, or answer it with Resume.",
        run.id
    );
    let mut result = follow::result(run, "", text);
    result.is_error = Some(true);
    result.into()
}

/// The result for a client that cannot be asked `pending`'s question of
/// `run`: the question as text, the run and how to answer it.
fn waiting(
    run: &RunRecord,
    pending: &PendingCall,
    question: Option<&Question>,
) -> rmcp::model::CallToolResult {
    let asks = match question {
        Some(Question::Ask(question)) => question.fallback_text(),
        Some(approval @ Question::Approval { .. }) => format!("[Approval needed]: {}", approval.message()),
        Some(Question::Elicitation(asked)) => asked.fallback_text(),
        None => format!(
            "[Waiting]: the call {} of {} waits for its result",
            pending.call.id, pending.call.name
        ),
    };
    let text = format!(
        "{asks}\n\nRun {} waits for this answer (tool call {}). Answer it with agentd's Resume \
         (gRPC, the inbox or A2A), then follow the run with SubscribeRun or GetRun.",
        run.id, pending.call.id
    );
    follow::result(run, "", text)
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
        self.drive(&tenant, stream, &context).await
    }
}
