//! The gRPC edge: decodes requests into domain commands, calls the runtime,
//! encodes the results. No business logic lives here; every error becomes a
//! status in `status.rs`.

pub mod auth;
pub mod caller;
pub mod convert;
mod status;
mod wire;

use std::pin::Pin;
use tokio::time::Instant;

use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

use crate::domain::Tenant;
use crate::metrics::Rpc;
use crate::pb;
use crate::pb::agent_service_server::AgentService;
use crate::runtime::{ExecuteTool, ResumeRun, RunStream, Runtime, StartRun};

use crate::door::{OpenStream, StreamGate};
pub(crate) use auth::tenant_of;
pub use auth::Authenticator;
pub(crate) use caller::decider_of;
pub(crate) use wire::WireErrors;

/// A stream of chunks as tonic sends it.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<pb::AgentChunk, Status>> + Send>>;

/// A stream of run events as tonic sends it.
pub type RunEventStream = Pin<Box<dyn Stream<Item = Result<pb::RunEvent, Status>> + Send>>;

/// The `agentd.v1.AgentService` implementation.
pub struct AgentServiceImpl {
    runtime: Runtime,
    /// Admits, counts, and ends the streams (deadlines, draining).
    gate: StreamGate,
}

impl AgentServiceImpl {
    pub fn new(runtime: Runtime) -> Self {
        Self::with_gate(runtime, StreamGate::default())
    }

    /// The service, with its streams behind `gate` (which the server
    /// drains on shutdown).
    pub fn with_gate(runtime: Runtime, gate: StreamGate) -> Self {
        Self { runtime, gate }
    }
}

/// What every streaming call starts with: when it was asked, for which
/// tenant, its place among the open streams, and the client's deadline.
struct Opening {
    requested: Instant,
    tenant: Tenant,
    open: OpenStream,
    deadline: Option<Instant>,
}

impl AgentServiceImpl {
    /// Opens a streaming call: admits it among the tenant's open streams
    /// (or refuses it) and reads the client's deadline.
    fn open<T>(&self, request: &Request<T>) -> Result<Opening, Status> {
        let requested = Instant::now();
        let tenant = tenant_of(request);
        let open = self.gate.admit(&tenant)?;
        let deadline = crate::door::client_deadline(request.metadata(), requested);
        Ok(Opening {
            requested,
            tenant,
            open,
            deadline,
        })
    }

    /// The response streaming `stream`, counted among the open streams of
    /// `rpc` and timed from the request to its first chunk, ended at the
    /// client's deadline or when the server has drained.
    fn chunk_stream(&self, rpc: Rpc, opening: Opening, stream: RunStream) -> Response<ChunkStream> {
        let Opening {
            requested,
            open,
            deadline,
            ..
        } = opening;
        let run_id = stream.run_id.to_string();
        let chunks = stream.map_events(move |event| Ok(convert::event_to_proto(&run_id, event)));
        let measured = self
            .runtime
            .metrics()
            .measure_stream(rpc, requested.into_std(), chunks);
        Response::new(Box::pin(self.gate.guard(measured, open, deadline)))
    }
}

/// Waits for the first chunks of a stream whose run has just started or
/// continued (they are stored within milliseconds), so that the response's
/// headers go out with them in one write instead of alone; at most until
/// the client's deadline, which then ends the stream.
async fn with_first_chunks(stream: &mut RunStream, deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => {
            // Past the deadline the stream ends without them.
            let _ = tokio::time::timeout_at(deadline, stream.first_chunks()).await;
        }
        None => stream.first_chunks().await,
    }
}

#[tonic::async_trait]
impl AgentService for AgentServiceImpl {
    type StreamAgentStream = ChunkStream;
    type ResumeStream = ChunkStream;
    type SubscribeRunStream = ChunkStream;
    type WatchRunsStream = RunEventStream;

    async fn stream_agent(
        &self,
        request: Request<pb::StreamAgentRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        let opening = self.open(&request)?;
        let decider = decider_of(&request);
        let trace = convert::trace_context(request.metadata());
        let request = request.into_inner();
        convert::check_start_request(self.runtime.limits(), &request)?;
        let start = StartRun {
            trace,
            decider: Some(decider),
            ..convert::start_request(request)?
        };
        let mut stream = self.runtime.start(&opening.tenant, start).await?;
        with_first_chunks(&mut stream, opening.deadline).await;
        Ok(self.chunk_stream(Rpc::StreamAgent, opening, stream))
    }

    async fn resume(&self, request: Request<pb::ResumeRequest>) -> Result<Response<ChunkStream>, Status> {
        let opening = self.open(&request)?;
        let decider = decider_of(&request);
        let trace = convert::trace_context(request.metadata());
        let resume = convert::resume_request(request.into_inner(), decider).inspect_err(|refused| {
            if let Some(reason) = refused.resume_rejection() {
                self.runtime.metrics().resume_rejected(reason);
            }
        })?;
        let resume = ResumeRun { trace, ..resume };
        let mut stream = self.runtime.resume(&opening.tenant, resume).await?;
        with_first_chunks(&mut stream, opening.deadline).await;
        Ok(self.chunk_stream(Rpc::Resume, opening, stream))
    }

    async fn subscribe_run(
        &self,
        request: Request<pb::SubscribeRunRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        let opening = self.open(&request)?;
        let pb::SubscribeRunRequest { run_id, after_seq } = request.into_inner();
        let run_id = convert::parse_run_id(&run_id)?;
        let stream = self.runtime.subscribe(&opening.tenant, run_id, after_seq).await?;
        Ok(self.chunk_stream(Rpc::SubscribeRun, opening, stream))
    }

    async fn watch_runs(
        &self,
        request: Request<pb::WatchRunsRequest>,
    ) -> Result<Response<RunEventStream>, Status> {
        let Opening {
            requested,
            tenant,
            open,
            deadline,
        } = self.open(&request)?;
        let watch = convert::watch_runs_request(request.into_inner())?;
        let events = self.runtime.watch_runs(&tenant, watch).await?.map(|event| {
            event
                .map(|event| convert::run_event_to_proto(&event))
                .map_err(Status::from)
        });
        let measured = self
            .runtime
            .metrics()
            .measure_stream(Rpc::WatchRuns, requested.into_std(), events);
        Ok(Response::new(Box::pin(
            self.gate.guard_feed(measured, open, deadline),
        )))
    }

    async fn get_run(&self, request: Request<pb::GetRunRequest>) -> Result<Response<pb::Run>, Status> {
        let tenant = tenant_of(&request);
        let pb::GetRunRequest { run_id } = request.into_inner();
        let run = self
            .runtime
            .get_run(&tenant, convert::parse_run_id(&run_id)?)
            .await?;
        let grants = self.runtime.run_grants(&tenant, &run).await?;
        Ok(Response::new(pb::Run {
            grants: convert::grants_to_proto(&grants),
            ..convert::run_with_messages_to_proto(&run)
        }))
    }

    async fn list_runs(
        &self,
        request: Request<pb::ListRunsRequest>,
    ) -> Result<Response<pb::ListRunsResponse>, Status> {
        let tenant = tenant_of(&request);
        let query = convert::list_runs_request(request.into_inner())?;
        let page = self.runtime.list_runs(&tenant, query).await?;
        Ok(Response::new(convert::run_page_to_proto(&page)))
    }

    async fn cancel_run(&self, request: Request<pb::CancelRunRequest>) -> Result<Response<pb::Run>, Status> {
        let tenant = tenant_of(&request);
        let decider = decider_of(&request);
        let pb::CancelRunRequest { run_id, reason } = request.into_inner();
        let run = self
            .runtime
            .cancel(&tenant, convert::parse_run_id(&run_id)?, reason, &decider)
            .await?;
        Ok(Response::new(convert::run_to_proto(&run)))
    }

    async fn list_agents(
        &self,
        request: Request<pb::ListAgentsRequest>,
    ) -> Result<Response<pb::ListAgentsResponse>, Status> {
        let tenant = tenant_of(&request);
        let agents = self
            .runtime
            .agents()
            .iter()
            .map(|(agent, is_default)| convert::agent_to_proto(agent, is_default))
            .collect();
        Ok(Response::new(pb::ListAgentsResponse {
            agents,
            tenant: tenant.to_string(),
        }))
    }

    async fn execute_tool(
        &self,
        request: Request<pb::ExecuteToolRequest>,
    ) -> Result<Response<pb::ExecuteToolResponse>, Status> {
        let tenant = tenant_of(&request);
        let trace = convert::trace_context(request.metadata());
        let pb::ExecuteToolRequest {
            tool_name,
            args,
            agent_id,
        } = request.into_inner();
        if tool_name.is_empty() {
            return Err(convert::invalid("tool_name", "tool_name is required").into());
        }
        let execute = ExecuteTool {
            agent_id,
            tool_name,
            args: convert::struct_to_json(&args.unwrap_or_default()),
            trace,
        };
        let output = self.runtime.execute_tool(&tenant, execute).await?;
        Ok(Response::new(pb::ExecuteToolResponse {
            content: output.content,
            is_error: output.is_error,
        }))
    }

    async fn get_thread(
        &self,
        request: Request<pb::GetThreadRequest>,
    ) -> Result<Response<pb::Thread>, Status> {
        let tenant = tenant_of(&request);
        let pb::GetThreadRequest { thread_id } = request.into_inner();
        let thread_id = convert::parse_thread_id(&thread_id)?;
        let view = self.runtime.get_thread(&tenant, &thread_id).await?;
        Ok(Response::new(convert::thread_to_proto(&view)))
    }

    async fn list_threads(
        &self,
        request: Request<pb::ListThreadsRequest>,
    ) -> Result<Response<pb::ListThreadsResponse>, Status> {
        let tenant = tenant_of(&request);
        let query = convert::list_threads_request(request.into_inner())?;
        let page = self.runtime.list_threads(&tenant, query).await?;
        Ok(Response::new(convert::thread_page_to_proto(&page)))
    }

    async fn revoke_grant(
        &self,
        request: Request<pb::RevokeGrantRequest>,
    ) -> Result<Response<pb::RevokeGrantResponse>, Status> {
        let tenant = tenant_of(&request);
        let pb::RevokeGrantRequest { grant_id } = request.into_inner();
        if grant_id.is_empty() {
            return Err(convert::invalid("grant_id", "grant_id is required").into());
        }
        self.runtime.revoke_grant(&tenant, &grant_id).await?;
        Ok(Response::new(pb::RevokeGrantResponse {}))
    }

    async fn delete_thread(
        &self,
        request: Request<pb::DeleteThreadRequest>,
    ) -> Result<Response<pb::DeleteThreadResponse>, Status> {
        let tenant = tenant_of(&request);
        let pb::DeleteThreadRequest { thread_id } = request.into_inner();
        let thread_id = convert::parse_thread_id(&thread_id)?;
        let deleted = self.runtime.delete_thread(&tenant, &thread_id).await?;
        Ok(Response::new(pb::DeleteThreadResponse {
            thread_id: thread_id.to_string(),
            deleted_run_ids: deleted.iter().map(ToString::to_string).collect(),
        }))
    }
}
