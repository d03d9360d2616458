//! agentd's agents as A2A v1.0 agents (`lf.a2a.v1.A2AService`, types and
//! service trait from the a2aproject's `a2a-pb`), on the port of
//! `agentd.v1`, behind the same API keys, tenants and stream gate, over
//! three bindings: gRPC (the service trait below), JSON-RPC and HTTP+JSON
//! (`http.rs`), all calling the same operations (`*_as`). The
//! request's A2A `tenant` names the agent (each agent card's interface
//! carries its agent's id there; empty: the default agent); agentd's own
//! tenant is the caller's key, as everywhere. `task.rs` maps runs to tasks,
//! `message.rs` messages to starts and answers, `card.rs` the agent cards.

pub(crate) mod card;
mod depth;
pub(crate) mod http;
mod message;
pub(crate) mod push;
mod task;

use std::pin::Pin;

use a2a_pb::proto::{self, a2a_service_server::A2aService};
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Request, Response, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::domain::{Decider, DecisionSource, RunId, RunRecord, RunStatus, Tenant, ThreadId, TraceContext};
use crate::door::{OpenStream, StreamGate};
use crate::grpc::tenant_of;
use crate::runtime::{ListRuns, ResumeRun, RunStream, Runtime, RuntimeError, StartRun};

pub(crate) use a2a_pb::proto::a2a_service_server::A2aServiceServer;

/// The ErrorInfo domain of the errors the A2A specification defines.
const A2A_DOMAIN: &str = "a2a-protocol.org";

pub(crate) type Events = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

/// The `lf.a2a.v1.A2AService` implementation.
pub(crate) struct A2aServiceImpl {
    runtime: Runtime,
    gate: StreamGate,
    /// Push notifications may go to non-public addresses.
    push_allow_private: bool,
}

impl A2aServiceImpl {
    pub(crate) fn new(runtime: Runtime, gate: StreamGate) -> Self {
        Self {
            runtime,
            gate,
            push_allow_private: false,
        }
    }

    /// The same service, letting push notifications go to loopback and
    /// private addresses too.
    pub(crate) fn with_push_allow_private(mut self, allow: bool) -> Self {
        self.push_allow_private = allow;
        self
    }
}

/// An error the A2A specification names (`TaskNotFoundError`, ...): its
/// gRPC code, and an ErrorInfo of its reason in the A2A domain.
fn a2a_error(code: Code, reason: &str, message: impl Into<String>) -> Status {
    let details = ErrorDetails::with_error_info(reason, A2A_DOMAIN, std::collections::HashMap::new());
    Status::with_error_details(code, message, details)
}

fn task_not_found(id: &str) -> Status {
    a2a_error(Code::NotFound, "TASK_NOT_FOUND", format!("task {id:?} not found"))
}

/// A runtime error as the A2A specification spells it where it has a name
/// for it; otherwise as agentd.v1 answers it (an answer's validation
/// errors are the same as Resume's).
fn status_of(error: RuntimeError, task_id: &str) -> Status {
    match error {
        RuntimeError::RunNotFound => task_not_found(task_id),
        RuntimeError::NotCancellable(status) => a2a_error(
            Code::FailedPrecondition,
            "TASK_NOT_CANCELABLE",
            format!("task {task_id} is {status}: only working or input-required tasks can be canceled"),
        ),
        other => Status::from(other),
    }
}

fn parse_task_id(id: &str) -> Result<RunId, Status> {
    id.parse().map_err(|_| task_not_found(id))
}

impl A2aServiceImpl {
    /// The agent a request's A2A `tenant` names (empty: the default).
    fn agent_id(&self, a2a_tenant: &str) -> Result<String, Status> {
        let agent = self
            .runtime
            .agents()
            .get(a2a_tenant)
            .ok_or_else(|| Status::from(RuntimeError::AgentNotFound(a2a_tenant.to_owned())))?;
        Ok(agent.id.clone())
    }

    async fn run_of(&self, tenant: &Tenant, id: &str) -> Result<RunRecord, Status> {
        let run_id = parse_task_id(id)?;
        self.runtime
            .get_run(tenant, run_id)
            .await
            .map_err(|error| status_of(error, id))
    }

    /// Starts or answers as `request.message` says; the run as stored
    /// before its stream, and the stream.
    async fn send(
        &self,
        caller: &Caller,
        request: proto::SendMessageRequest,
    ) -> Result<(RunRecord, RunStream), Status> {
        let (tenant, trace) = (&caller.tenant, caller.trace.clone());
        let message = request
            .message
            .ok_or_else(|| Status::from(crate::grpc::convert::invalid("message", "a message is required")))?;
        let push = request
            .configuration
            .and_then(|configuration| configuration.task_push_notification_config);
        if message.task_id.is_empty() {
            let agent_id = self.agent_id(&request.tenant)?;
            let mut start = StartRun {
                trace,
                ..message::start_run(&agent_id, &message)?
            };
            if let Some(push) = push {
                // Stored before the run starts, so that its first update
                // is pushed too.
                let run_id = RunId::new();
                let config = push::new_config(run_id, tenant, push, self.push_allow_private).await?;
                push::store(&self.runtime, &config).await?;
                start.run_id = Some(run_id);
            }
            let stream = self.runtime.start(tenant, start).await?;
            let run = self.run_of(tenant, &stream.run_id.to_string()).await?;
            return Ok((run, stream));
        }
        let run = self.run_of(tenant, &message.task_id).await?;
        if let Some(push) = push {
            self.put_push_config(&run, push).await?;
        }
        if run.status() != RunStatus::Suspended {
            return Err(a2a_error(
                Code::FailedPrecondition,
                "UNSUPPORTED_OPERATION",
                format!(
                    "task {} is {}, not waiting for input",
                    message.task_id,
                    task::state_of(run.status()).as_str_name()
                ),
            ));
        }
        let resume = ResumeRun {
            trace,
            ..message::resume_run(run.id, &message, caller.decider())?
        };
        let stream = self
            .runtime
            .resume(tenant, resume)
            .await
            .map_err(|error| status_of(error, &message.task_id))?;
        Ok((run, stream))
    }

    /// Stores `request` as a push notification config of `run`.
    async fn put_push_config(
        &self,
        run: &RunRecord,
        request: proto::TaskPushNotificationConfig,
    ) -> Result<crate::runtime::PushConfig, Status> {
        let config = push::new_config(run.id, &run.tenant, request, self.push_allow_private).await?;
        push::store(&self.runtime, &config).await?;
        Ok(config)
    }

    /// The A2A events of `stream`: the task as it stands first, then the
    /// updates of its chunks.
    fn events(&self, first: proto::Task, run: RunRecord, stream: RunStream, open: OpenStream) -> Events {
        let mut updates = task::Updates::new(run);
        let updates = futures_util::StreamExt::flat_map(
            stream.map_events(move |event| updates.of(&event.chunk, event.time)),
            |events| futures_util::stream::iter(events.into_iter().map(Ok)),
        );
        let first = task::stream_response(proto::stream_response::Payload::Task(first));
        let events = tokio_stream::once(Ok(first)).chain(updates);
        Box::pin(self.gate.guard(events, open, None))
    }
}

/// Who calls, as every binding learns it: the tenant of the caller's key,
/// the caller's name (see `grpc::caller`), and the trace the request
/// carries.
#[derive(Clone, Debug, Default)]
pub(crate) struct Caller {
    pub tenant: Tenant,
    pub name: String,
    pub trace: Option<TraceContext>,
}

impl Caller {
    fn of<T>(request: &Request<T>) -> Self {
        Self {
            tenant: tenant_of(request),
            name: crate::door::caller_name(request.extensions()),
            trace: crate::grpc::convert::trace_context(request.metadata()),
        }
    }

    /// The caller as the decider of what its requests decide.
    fn decider(&self) -> Decider {
        Decider::new(self.name.clone(), DecisionSource::A2a)
    }
}

/// `status` as the A2A specification has every binding say it: a request
/// it refuses as invalid (a malformed id, an answer that fits no option,
/// ...) is `INVALID_PARAMS` in the A2A domain, so that SDKs raise their
/// typed error; agentd's own reason stays in the ErrorInfo's metadata
/// (`agentdReason`), the BadRequest violations as they were.
pub(crate) fn spec(status: Status) -> Status {
    let details = status.get_error_details();
    let info = details.error_info();
    if status.code() != Code::InvalidArgument || info.is_some_and(|info| info.domain == A2A_DOMAIN) {
        return status;
    }
    let mut metadata = info.map(|info| info.metadata.clone()).unwrap_or_default();
    if let Some(info) = info {
        metadata.insert("agentdReason".into(), info.reason.clone());
    }
    let mut spec = ErrorDetails::with_error_info("INVALID_PARAMS", A2A_DOMAIN, metadata);
    if let Some(bad_request) = details.bad_request() {
        spec.set_bad_request(bad_request.field_violations.clone());
    }
    Status::with_error_details(Code::InvalidArgument, status.message(), spec)
}

/// The operations of A2A, one each, that every binding calls (gRPC's
/// service below, JSON-RPC's and HTTP+JSON's routes in `http.rs`); their
/// errors as [`spec`] says them.
impl A2aServiceImpl {
    pub(crate) async fn send_message_as(
        &self,
        caller: &Caller,
        request: proto::SendMessageRequest,
    ) -> Result<proto::SendMessageResponse, Status> {
        let tenant = &caller.tenant;
        let immediately = request
            .configuration
            .as_ref()
            .is_some_and(|configuration| configuration.return_immediately);
        let history_length = request
            .configuration
            .as_ref()
            .and_then(|configuration| configuration.history_length);
        let (_, stream) = self.send(caller, request).await?;
        let id = stream.run_id;
        if !immediately {
            // Until the run suspends or ends: then the task says how.
            let mut chunks = stream.map_events(|_| ());
            while chunks.next().await.is_some() {}
        }
        let run = self.run_of(tenant, &id.to_string()).await?;
        Ok(proto::SendMessageResponse {
            payload: Some(proto::send_message_response::Payload::Task(task::task(
                &run,
                history_length,
            ))),
        })
    }

    pub(crate) async fn send_streaming_message_as(
        &self,
        caller: &Caller,
        request: proto::SendMessageRequest,
    ) -> Result<Events, Status> {
        // Admitted first, so that a draining server refuses before it
        // starts or answers anything.
        let open = self.gate.admit(&caller.tenant)?;
        let (run, stream) = self.send(caller, request).await?;
        let mut first = task::task(&run, Some(0));
        if let Some(status) = first.status.as_mut() {
            // The answer was taken: the task works on again.
            status.state = proto::TaskState::Working as i32;
            status.message = None;
        }
        Ok(self.events(first, run, stream, open))
    }

    pub(crate) async fn get_task_as(
        &self,
        caller: &Caller,
        request: proto::GetTaskRequest,
    ) -> Result<proto::Task, Status> {
        let run = self.run_of(&caller.tenant, &request.id).await?;
        Ok(task::task(&run, request.history_length))
    }

    pub(crate) async fn list_tasks_as(
        &self,
        caller: &Caller,
        request: proto::ListTasksRequest,
    ) -> Result<proto::ListTasksResponse, Status> {
        let tenant = &caller.tenant;
        let invalid = |field, reason: &str| Status::from(crate::grpc::convert::invalid(field, reason));
        let status = match request.status() {
            proto::TaskState::Unspecified => None,
            state => {
                Some(task::status_of(state).ok_or_else(|| invalid("status", "no task is in this state"))?)
            }
        };
        let page_size = u32::try_from(request.page_size.unwrap_or(50).clamp(1, 100)).unwrap_or(50);
        let before = match request.page_token.as_str() {
            "" => None,
            token => Some(
                token
                    .parse::<RunId>()
                    .map_err(|_| invalid("page_token", "not a page token of ListTasks"))?,
            ),
        };
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        let updated_after = request.status_timestamp_after.as_ref().map(|after| {
            crate::domain::Timestamp(after.seconds * 1_000_000 + i64::from(after.nanos) / 1_000)
        });
        let mut runs: Vec<RunRecord>;
        let next;
        let total;
        if request.context_id.is_empty() {
            let list = ListRuns {
                status,
                agent_id: (!request.tenant.is_empty()).then(|| request.tenant.clone()),
                updated_after,
                page_size,
                before,
            };
            total = self.runtime.count_runs(tenant, &list).await?;
            let page = self.runtime.list_runs(tenant, list).await?;
            runs = page.runs;
            next = page.next;
        } else {
            // A context is a thread: its runs, newest first.
            let thread = ThreadId::new(&request.context_id)
                .map_err(|error| invalid("context_id", &error.to_string()))?;
            runs = match self.runtime.get_thread(tenant, &thread).await {
                Ok(view) => view.runs,
                Err(RuntimeError::ThreadNotFound) => Vec::new(),
                Err(error) => return Err(error.into()),
            };
            runs.retain(|run| {
                status.is_none_or(|status| run.status() == status)
                    && updated_after.is_none_or(|after| run.updated_at > after)
            });
            total = runs.len() as u64;
            runs.retain(|run| before.is_none_or(|before| run.id < before));
            runs.sort_unstable_by_key(|run| std::cmp::Reverse(run.id));
            let more = runs.len() > page_size as usize;
            runs.truncate(page_size as usize);
            next = more.then(|| runs.last().map(|run| run.id)).flatten();
        }
        let tasks: Vec<proto::Task> = runs
            .iter()
            .map(|run| {
                let mut task = task::task(run, Some(request.history_length.unwrap_or(0)));
                if !include_artifacts {
                    task.artifacts.clear();
                }
                task
            })
            .collect();
        let size = i32::try_from(tasks.len()).unwrap_or(i32::MAX);
        Ok(proto::ListTasksResponse {
            tasks,
            next_page_token: next.map(|id| id.to_string()).unwrap_or_default(),
            page_size: size,
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    pub(crate) async fn cancel_task_as(
        &self,
        caller: &Caller,
        request: proto::CancelTaskRequest,
    ) -> Result<proto::Task, Status> {
        let run_id = parse_task_id(&request.id)?;
        let run = self
            .runtime
            .cancel(
                &caller.tenant,
                run_id,
                "canceled through A2A".into(),
                &caller.decider(),
            )
            .await
            .map_err(|error| status_of(error, &request.id))?;
        Ok(task::task(&run, Some(0)))
    }

    pub(crate) async fn subscribe_to_task_as(
        &self,
        caller: &Caller,
        request: proto::SubscribeToTaskRequest,
    ) -> Result<Events, Status> {
        let open = self.gate.admit(&caller.tenant)?;
        let tenant = &caller.tenant;
        let run = self.run_of(tenant, &request.id).await?;
        if !matches!(run.status(), RunStatus::Running | RunStatus::Suspended) {
            return Err(a2a_error(
                Code::FailedPrecondition,
                "UNSUPPORTED_OPERATION",
                format!(
                    "task {} is {}: a finished task has no updates to follow",
                    request.id,
                    task::state_of(run.status()).as_str_name()
                ),
            ));
        }
        // The snapshot first, then what follows it.
        let stream = self
            .runtime
            .subscribe(tenant, run.id, run.last_seq())
            .await
            .map_err(|error| status_of(error, &request.id))?;
        let first = task::task(&run, Some(0));
        Ok(self.events(first, run, stream, open))
    }

    pub(crate) async fn create_push_config_as(
        &self,
        caller: &Caller,
        request: proto::TaskPushNotificationConfig,
    ) -> Result<proto::TaskPushNotificationConfig, Status> {
        let run = self.run_of(&caller.tenant, &request.task_id).await?;
        let a2a_tenant = request.tenant.clone();
        let config = self.put_push_config(&run, request).await?;
        Ok(push::to_proto(&config, &a2a_tenant))
    }

    pub(crate) async fn get_push_config_as(
        &self,
        caller: &Caller,
        request: proto::GetTaskPushNotificationConfigRequest,
    ) -> Result<proto::TaskPushNotificationConfig, Status> {
        let run = self.run_of(&caller.tenant, &request.task_id).await?;
        let config = push::get(&self.runtime, &run, &request.id).await?;
        Ok(push::to_proto(&config, &request.tenant))
    }

    pub(crate) async fn list_push_configs_as(
        &self,
        caller: &Caller,
        request: proto::ListTaskPushNotificationConfigsRequest,
    ) -> Result<proto::ListTaskPushNotificationConfigsResponse, Status> {
        let run = self.run_of(&caller.tenant, &request.task_id).await?;
        let (configs, next_page_token) =
            push::list(&self.runtime, &run, request.page_size, &request.page_token).await?;
        Ok(proto::ListTaskPushNotificationConfigsResponse {
            configs: configs
                .iter()
                .map(|config| push::to_proto(config, &request.tenant))
                .collect(),
            next_page_token,
        })
    }

    pub(crate) async fn delete_push_config_as(
        &self,
        caller: &Caller,
        request: proto::DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), Status> {
        let run = self.run_of(&caller.tenant, &request.task_id).await?;
        push::delete(&self.runtime, &run, &request.id).await
    }

    pub(crate) fn extended_agent_card_as(&self) -> Result<proto::AgentCard, Status> {
        Err(a2a_error(
            Code::FailedPrecondition,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            "agentd has no extended agent card: the public card at /.well-known/agent-card.json is complete",
        ))
    }
}

/// The gRPC binding: each method the operation of its name.
#[tonic::async_trait]
impl A2aService for A2aServiceImpl {
    type SendStreamingMessageStream = Events;
    type SubscribeToTaskStream = Events;

    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        let caller = Caller::of(&request);
        grpc(self.send_message_as(&caller, request.into_inner()).await)
    }

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Events>, Status> {
        let caller = Caller::of(&request);
        grpc(
            self.send_streaming_message_as(&caller, request.into_inner())
                .await,
        )
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let caller = Caller::of(&request);
        grpc(self.get_task_as(&caller, request.into_inner()).await)
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        let caller = Caller::of(&request);
        grpc(self.list_tasks_as(&caller, request.into_inner()).await)
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        let caller = Caller::of(&request);
        grpc(self.cancel_task_as(&caller, request.into_inner()).await)
    }

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Events>, Status> {
        let caller = Caller::of(&request);
        grpc(self.subscribe_to_task_as(&caller, request.into_inner()).await)
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let caller = Caller::of(&request);
        grpc(self.create_push_config_as(&caller, request.into_inner()).await)
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        let caller = Caller::of(&request);
        grpc(self.get_push_config_as(&caller, request.into_inner()).await)
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        let caller = Caller::of(&request);
        grpc(self.list_push_configs_as(&caller, request.into_inner()).await)
    }

    async fn get_extended_agent_card(
        &self,
        _request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        grpc(self.extended_agent_card_as())
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        let caller = Caller::of(&request);
        grpc(self.delete_push_config_as(&caller, request.into_inner()).await)
    }
}

/// An operation's outcome as a gRPC answer.
fn grpc<T>(outcome: Result<T, Status>) -> Result<Response<T>, Status> {
    outcome.map(Response::new).map_err(spec)
}
