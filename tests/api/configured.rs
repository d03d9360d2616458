//! Servers hosting agents that a test configures itself (tool lists,
//! per-tool approval), and helpers for approvals and custom suspensions.

use std::ops::Deref;

use agentd::agent::{AgentSpec, ToolEntry};
use agentd::grpc::convert::{json_to_struct, struct_to_json};
use agentd::pb::agent_chunk::Chunk;
use agentd::pb::resume_request::Answer;
use agentd::pb::{self, AgentChunk};
use prost_types::value::Kind;
use serde_json::Value;
use tonic::Code;
use tonic_types::StatusExt;

use crate::helpers::*;

/// A test server with its own agents; the store's folder lives as long as
/// the server.
pub(crate) struct Configured {
    server: TestServer,
    _temp: tempfile::TempDir,
}

impl Deref for Configured {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        &self.server
    }
}

/// Starts a server hosting exactly `agents` (the first is the default).
pub(crate) async fn server_with(agents: Vec<AgentSpec>) -> Configured {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    settings.agents = agents;
    Configured {
        server: TestServer::start_with(settings).await,
        _temp: temp,
    }
}

/// A scripted agent with these tools (not the default).
pub(crate) fn agent(id: &str, tools: Vec<ToolEntry>) -> AgentSpec {
    AgentSpec {
        id: id.into(),
        description: format!("test agent {id}"),
        tools,
        default: false,
        ..AgentSpec::assistant()
    }
}

impl Configured {
    /// Starts a run of `agent_id` and collects its stream.
    pub(crate) async fn run(&self, agent_id: &str, prompt: &str) -> Vec<AgentChunk> {
        self.run_with(agent_id, prompt, None).await
    }

    /// Starts a run with run options and collects its stream.
    pub(crate) async fn run_with(
        &self,
        agent_id: &str,
        prompt: &str,
        options: Option<pb::RunOptions>,
    ) -> Vec<AgentChunk> {
        self.start_run(pb::StreamAgentRequest {
            agent_id: agent_id.into(),
            prompt: prompt.into(),
            options,
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
    }

    /// Answers `tool_call_id` (empty: the only pending call).
    pub(crate) async fn answer(
        &self,
        run_id: &str,
        tool_call_id: &str,
        answer: Answer,
    ) -> Result<Vec<AgentChunk>, tonic::Status> {
        self.resume(resume_request(run_id, tool_call_id, answer)).await
    }

    /// Sends an answer that must be rejected with INVALID_ARGUMENT naming
    /// `field`; checks the run did not change; returns the status.
    pub(crate) async fn expect_rejected(
        &self,
        run_id: &str,
        tool_call_id: &str,
        answer: Answer,
        field: &str,
    ) -> tonic::Status {
        let before = self.get_run(run_id).await;
        let status = expect_code(
            self.answer(run_id, tool_call_id, answer).await,
            Code::InvalidArgument,
        );
        let bad_request = status.get_details_bad_request().expect("BadRequest details");
        assert_eq!(bad_request.field_violations[0].field, field, "{status:?}");
        assert_eq!(
            self.get_run(run_id).await,
            before,
            "a rejected Resume changes nothing"
        );
        status
    }
}

/// Resume `data` holding this JSON.
pub(crate) fn data(json: Value) -> Answer {
    Answer::Data(json_value(json))
}

fn json_value(json: Value) -> prost_types::Value {
    let kind = match json {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().expect("a finite number")),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.into_iter().map(json_value).collect(),
        }),
        object @ Value::Object(_) => Kind::StructValue(json_to_struct(&object)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// An approval decision.
pub(crate) fn approval(approved: bool, reason: &str) -> Answer {
    Answer::Approval(pb::Approval {
        approved,
        reason: reason.into(),
        edited_args: None,
        ..Default::default()
    })
}

/// The `tool_call_approval` chunks of a stream.
pub(crate) fn approvals(chunks: &[AgentChunk]) -> Vec<pb::ToolCallApproval> {
    chunks
        .iter()
        .filter_map(|c| match &c.chunk {
            Some(Chunk::ToolCallApproval(a)) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

/// The custom payload of a suspension, as JSON.
pub(crate) fn custom_payload(payload: Option<&pb::SuspendPayload>) -> Value {
    match payload.and_then(|p| p.kind.as_ref()) {
        Some(pb::suspend_payload::Kind::Custom(data)) => struct_to_json(data),
        other => panic!("not a custom payload: {other:?}"),
    }
}
