//! Real model providers against a local server speaking their wire format:
//! an agentd server whose agent runs on `mock:test-model`, where `mock` is
//! a `[providers.mock]` table pointing at a [`MockProvider`]. Each test
//! checks both directions: the chunks the gRPC client receives and the
//! exact requests the provider receives.

mod anthropic;
pub(crate) mod config;
mod failures;
mod mock;
mod openai;

use std::ops::Deref;
use std::time::Duration;

use agentd::agent::{AgentSpec, ToolEntry};
use agentd::grpc::convert::struct_to_json;
use agentd::model::{ProviderConfig, ProviderKind};
use agentd::pb::agent_chunk::Chunk;
use agentd::pb::{self, AgentChunk};
use agentd::tools::{AskUser, Tool};
use serde_json::Value;

pub(crate) use mock::{MockProvider, Reply};

use crate::helpers::*;

pub(crate) const MODEL: &str = "test-model";
pub(crate) const INSTRUCTIONS: &str = "You are a concise assistant.";

/// The gRPC server, the provider behind it, and the store's folder.
pub(crate) struct Harness {
    api: TestServer,
    pub provider: MockProvider,
    _temp: tempfile::TempDir,
}

impl Deref for Harness {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        &self.api
    }
}

/// The provider table every test starts from: short retries and timeouts,
/// the key read from a variable that cargo sets for tests.
fn provider_config(kind: ProviderKind, base_url: &str) -> ProviderConfig {
    ProviderConfig {
        kind: Some(kind),
        base_url: Some(base_url.to_owned()),
        api_key_env: Some("CARGO_PKG_NAME".to_owned()),
        connect_timeout: Some(Duration::from_secs(5)),
        first_byte_timeout: Some(Duration::from_secs(10)),
        idle_timeout: Some(Duration::from_secs(10)),
        max_retries: Some(2),
        retry_backoff: Some(Duration::from_millis(10)),
        ..ProviderConfig::default()
    }
}

/// The API key the provider should receive.
pub(crate) fn api_key() -> Option<String> {
    std::env::var("CARGO_PKG_NAME").ok()
}

/// A server whose default agent (with `ask_user`) runs on a provider of
/// `kind` that answers with `replies`.
pub(crate) async fn harness(kind: ProviderKind, replies: Vec<Reply>) -> Harness {
    harness_with(kind, replies, |_| {}).await
}

/// Like [`harness`], with the provider table adjusted by `tune`.
pub(crate) async fn harness_with(
    kind: ProviderKind,
    replies: Vec<Reply>,
    tune: impl FnOnce(&mut ProviderConfig),
) -> Harness {
    let provider = MockProvider::start(replies).await;
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    let mut config = provider_config(kind, &provider.base_url);
    tune(&mut config);
    settings.providers.insert("mock".to_owned(), config);
    settings.agents = vec![AgentSpec {
        id: "assistant".into(),
        description: "An assistant on a real provider's wire format.".into(),
        model: format!("mock:{MODEL}"),
        instructions: Some(INSTRUCTIONS.into()),
        tools: vec![ToolEntry::name(AskUser::NAME)],
        default: true,
        ..AgentSpec::assistant()
    }];
    Harness {
        api: TestServer::start_with(settings).await,
        provider,
        _temp: temp,
    }
}

/// A server on a provider of `kind` that answers each step with the next of
/// these SSE `transcripts`, and the chunks of a run of `prompt` on it.
pub(crate) async fn replay(
    kind: ProviderKind,
    transcripts: &[&str],
    prompt: &str,
) -> (Harness, Vec<AgentChunk>) {
    let server = harness(kind, transcripts.iter().copied().map(Reply::sse).collect()).await;
    let chunks = server.stream(prompt).await;
    (server, chunks)
}

/// The [`tool_calls`] of `ask_user` calls with these ids and arguments
/// (the tool's name as the provider sends it).
pub(crate) fn ask_user_calls(calls: &[(&str, &Value)]) -> Vec<(String, String, Value)> {
    calls
        .iter()
        .map(|(id, args)| ((*id).to_owned(), "ask_user".to_owned(), (*args).clone()))
        .collect()
}

/// The input schema of `ask_user`, as the provider must receive it.
pub(crate) fn ask_user_schema() -> Value {
    AskUser::new().spec().input_schema.clone()
}

/// The description of `ask_user`, as the provider must receive it.
pub(crate) fn ask_user_description() -> String {
    AskUser::new().spec().description.clone()
}

/// The `tool_call` chunks: id, name and arguments.
pub(crate) fn tool_calls(chunks: &[AgentChunk]) -> Vec<(String, String, Value)> {
    chunks
        .iter()
        .filter_map(|c| match &c.chunk {
            Some(Chunk::ToolCall(call)) => Some((
                call.tool_call_id.clone(),
                call.tool_name.clone(),
                call.args.as_ref().map(struct_to_json).unwrap_or(Value::Null),
            )),
            _ => None,
        })
        .collect()
}

/// The `error` chunks.
pub(crate) fn errors(chunks: &[AgentChunk]) -> Vec<pb::RunError> {
    chunks
        .iter()
        .filter_map(|c| match &c.chunk {
            Some(Chunk::Error(error)) => Some(error.clone()),
            _ => None,
        })
        .collect()
}

/// The usage of each `step_finish` chunk, as (input, output).
pub(crate) fn step_usage(chunks: &[AgentChunk]) -> Vec<(u64, u64)> {
    chunks
        .iter()
        .filter_map(|c| match &c.chunk {
            Some(Chunk::StepFinish(step)) => step.usage.map(|u| (u.input_tokens, u.output_tokens)),
            _ => None,
        })
        .collect()
}

/// The usage of the `finish` chunk, as (input, output).
pub(crate) fn finish_usage(chunks: &[AgentChunk]) -> (u64, u64) {
    let usage = finish(chunks).usage.expect("finish carries usage");
    (usage.input_tokens, usage.output_tokens)
}

/// A run's usage as GetRun reports it, as (input, output).
pub(crate) fn run_usage(run: &pb::Run) -> (u64, u64) {
    let usage = run.usage.expect("the run carries usage");
    (usage.input_tokens, usage.output_tokens)
}

/// Asserts a run failed on a provider error: an `error` chunk with `code`
/// whose message contains `message`, then `finish{ERROR}`, and GetRun says
/// FAILED with the same error.
pub(crate) async fn assert_failed(server: &Harness, chunks: &[AgentChunk], code: &str, message: &str) {
    let kinds = kinds(chunks);
    assert_eq!(kinds[kinds.len() - 2..], ["error", "finish"], "{kinds:?}");
    assert_eq!(finish_reason(chunks), pb::FinishReason::Error);
    let error = &errors(chunks)[0];
    assert_eq!(error.code, code, "{error:?}");
    assert!(error.message.contains(message), "{error:?}");
    let run = server.get_run(&run_id(chunks)).await;
    assert_eq!(status_of(&run), pb::RunStatus::Failed);
    assert_eq!(run.error.as_ref(), Some(error));
}
