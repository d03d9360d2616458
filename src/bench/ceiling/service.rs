//! The ceiling's `agentd.v1.AgentService`: StreamAgent and Resume each do
//! one SQLite write and then stream the recorded chunks of a real cycle
//! (with a fresh run id and time); every other RPC is UNIMPLEMENTED. No
//! agent, no run state: only what any service answering these two calls
//! durably has to do.

use std::pin::Pin;
use std::sync::Arc;

use crate::pb::agent_service_server::AgentService;
use crate::pb::{self, AgentChunk};
use prost::Message as _;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::script::Script;
use super::store::{CeilingStore, WriteKind};

type ChunkStream = Pin<Box<dyn Stream<Item = Result<AgentChunk, Status>> + Send>>;

pub(super) struct CeilingService {
    script: Arc<Script>,
    store: CeilingStore,
}

impl CeilingService {
    pub(super) fn new(script: Script, store: CeilingStore) -> Self {
        Self {
            script: Arc::new(script),
            store,
        }
    }
}

/// `chunks` as a stream of run `run_id`, stamped now.
fn replay(chunks: &[AgentChunk], run_id: &str) -> ChunkStream {
    let now = crate::domain::Timestamp::now();
    let (seconds, nanos) = now.seconds_nanos();
    let time = prost_types::Timestamp { seconds, nanos };
    let chunks: Vec<Result<AgentChunk, Status>> = chunks
        .iter()
        .map(|chunk| {
            let mut chunk = chunk.clone();
            chunk.run_id = run_id.to_owned();
            chunk.time = Some(time);
            Ok(chunk)
        })
        .collect();
    Box::pin(tokio_stream::iter(chunks))
}

fn unimplemented<T>(rpc: &str) -> Result<Response<T>, Status> {
    Err(Status::unimplemented(format!(
        "the ceiling service does not serve {rpc}"
    )))
}

#[tonic::async_trait]
impl AgentService for CeilingService {
    type StreamAgentStream = ChunkStream;
    type ResumeStream = ChunkStream;
    type SubscribeRunStream = ChunkStream;
    type WatchRunsStream =
        std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<pb::RunEvent, Status>> + Send>>;

    async fn watch_runs(
        &self,
        _request: Request<pb::WatchRunsRequest>,
    ) -> Result<Response<Self::WatchRunsStream>, Status> {
        unimplemented("WatchRuns")
    }

    async fn stream_agent(
        &self,
        request: Request<pb::StreamAgentRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        let body = request.into_inner().encode_to_vec();
        let run_id = uuid::Uuid::now_v7().to_string();
        self.store
            .write(&run_id, WriteKind::Start, body)
            .await
            .map_err(Status::internal)?;
        Ok(Response::new(replay(&self.script.start, &run_id)))
    }

    async fn resume(&self, request: Request<pb::ResumeRequest>) -> Result<Response<ChunkStream>, Status> {
        let request = request.into_inner();
        let body = request.encode_to_vec();
        self.store
            .write(&request.run_id, WriteKind::Resume, body)
            .await
            .map_err(Status::internal)?;
        Ok(Response::new(replay(&self.script.resume, &request.run_id)))
    }

    async fn subscribe_run(
        &self,
        _request: Request<pb::SubscribeRunRequest>,
    ) -> Result<Response<ChunkStream>, Status> {
        unimplemented("SubscribeRun")
    }

    async fn get_run(&self, _request: Request<pb::GetRunRequest>) -> Result<Response<pb::Run>, Status> {
        unimplemented("GetRun")
    }

    async fn list_runs(
        &self,
        _request: Request<pb::ListRunsRequest>,
    ) -> Result<Response<pb::ListRunsResponse>, Status> {
        unimplemented("ListRuns")
    }

    async fn cancel_run(&self, _request: Request<pb::CancelRunRequest>) -> Result<Response<pb::Run>, Status> {
        unimplemented("CancelRun")
    }

    async fn list_agents(
        &self,
        _request: Request<pb::ListAgentsRequest>,
    ) -> Result<Response<pb::ListAgentsResponse>, Status> {
        unimplemented("ListAgents")
    }

    async fn execute_tool(
        &self,
        _request: Request<pb::ExecuteToolRequest>,
    ) -> Result<Response<pb::ExecuteToolResponse>, Status> {
        unimplemented("ExecuteTool")
    }

    async fn get_thread(
        &self,
        _request: Request<pb::GetThreadRequest>,
    ) -> Result<Response<pb::Thread>, Status> {
        unimplemented("GetThread")
    }

    async fn list_threads(
        &self,
        _request: Request<pb::ListThreadsRequest>,
    ) -> Result<Response<pb::ListThreadsResponse>, Status> {
        unimplemented("ListThreads")
    }

    async fn delete_thread(
        &self,
        _request: Request<pb::DeleteThreadRequest>,
    ) -> Result<Response<pb::DeleteThreadResponse>, Status> {
        unimplemented("DeleteThread")
    }

    async fn revoke_grant(
        &self,
        _request: Request<pb::RevokeGrantRequest>,
    ) -> Result<Response<pb::RevokeGrantResponse>, Status> {
        unimplemented("RevokeGrant")
    }
}
