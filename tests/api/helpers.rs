//! Starts the whole service on `127.0.0.1:0` with a fresh SQLite store in a
//! temporary folder, and wraps the generated client with request helpers.

use std::net::SocketAddr;
use std::path::Path;

use agentd::config::Overrides;
use agentd::pb::agent_chunk::Chunk;
use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::pb::{self, AgentChunk};
use agentd::server;
use agentd::server::{FileConfig, ServerSettings};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic::transport::Channel;
use tonic::{Code, Status};

pub(crate) struct TestServer {
    pub addr: SocketAddr,
    pub client: AgentServiceClient<Channel>,
    shutdown: Option<oneshot::Sender<()>>,
    _temp: Option<tempfile::TempDir>,
}

/// Settings for a test server whose store lives in `data_dir`.
pub(crate) fn settings_in(data_dir: &Path) -> ServerSettings {
    let mut settings = FileConfig::default().settle(Overrides::default());
    settings.server.listen = "127.0.0.1:0".parse().unwrap();
    settings.server.data_dir = data_dir.to_owned();
    settings
}

/// `careful`: the default agent's model, whose ask_user calls each wait
/// for approval first.
pub(crate) fn careful() -> agentd::agent::AgentSpec {
    let mut careful = agentd::agent::AgentSpec::assistant();
    careful.id = "careful".into();
    careful.default = false;
    careful.tools = vec![agentd::agent::ToolEntry::with_approval("ask_user")];
    careful
}

/// Run `run_id` of `server` (of [`careful`]) had its ask_user call
/// approved by a grant, and its question answered through `surface`.
pub(crate) async fn assert_granted_then_answered(
    server: &TestServer,
    run_id: &str,
    surface: pb::DecisionSource,
) {
    let run = server.get_run(run_id).await;
    let sources: Vec<_> = run.decisions.iter().map(|d| d.source()).collect();
    assert_eq!(
        sources,
        [pb::DecisionSource::Grant, surface],
        "approved by the grant, answered through {surface:?}: {:?}",
        run.decisions
    );
}

impl TestServer {
    /// A server with the embedded defaults and a fresh SQLite store.
    pub(crate) async fn start() -> Self {
        let temp = tempfile::tempdir().expect("temp dir");
        let settings = settings_in(temp.path());
        let mut server = Self::start_with(settings).await;
        server._temp = Some(temp);
        server
    }

    /// A server with these settings (the listen address is ignored: the
    /// server binds an ephemeral port).
    pub(crate) async fn start_with(settings: ServerSettings) -> Self {
        let runtime = server::build_runtime(&settings).await.expect("runtime");
        Self::serve(runtime).await
    }

    /// A server for a runtime built by the test.
    pub(crate) async fn serve(runtime: agentd::runtime::Runtime) -> Self {
        // Bound before serving, so the client can connect without waiting.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().unwrap();
        let (shutdown, signal) = oneshot::channel::<()>();
        tokio::spawn(async move {
            server::serve(listener, runtime, async {
                let _ = signal.await;
            })
            .await
            .expect("server failed");
        });
        let client = AgentServiceClient::connect(format!("http://{addr}"))
            .await
            .expect("connect");
        Self {
            addr,
            client,
            shutdown: Some(shutdown),
            _temp: None,
        }
    }

    /// A new connection to the server, for other services' clients.
    pub(crate) async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .unwrap()
            .connect()
            .await
            .expect("connect")
    }

    pub(crate) fn client(&self) -> AgentServiceClient<Channel> {
        self.client.clone()
    }

    /// Starts a run with a prompt and collects its stream to the end.
    pub(crate) async fn stream(&self, prompt: &str) -> Vec<AgentChunk> {
        self.start_run(pb::StreamAgentRequest {
            prompt: prompt.into(),
            ..Default::default()
        })
        .await
        .expect("StreamAgent")
    }

    pub(crate) async fn start_run(&self, request: pb::StreamAgentRequest) -> Result<Vec<AgentChunk>, Status> {
        let stream = self.client().stream_agent(request).await?.into_inner();
        collect(stream).await
    }

    pub(crate) async fn resume(&self, request: pb::ResumeRequest) -> Result<Vec<AgentChunk>, Status> {
        let stream = self.client().resume(request).await?.into_inner();
        collect(stream).await
    }

    pub(crate) async fn resume_text(&self, run_id: &str, text: &str) -> Result<Vec<AgentChunk>, Status> {
        self.resume(resume_request(
            run_id,
            "",
            pb::resume_request::Answer::Text(text.into()),
        ))
        .await
    }

    pub(crate) async fn resume_labels(
        &self,
        run_id: &str,
        labels: &[&str],
    ) -> Result<Vec<AgentChunk>, Status> {
        let labels = labels.iter().map(|l| l.to_string()).collect();
        let answer = pb::resume_request::Answer::Selections(pb::Selections { labels });
        self.resume(resume_request(run_id, "", answer)).await
    }

    pub(crate) async fn get_run(&self, run_id: &str) -> pb::Run {
        self.client()
            .get_run(pb::GetRunRequest {
                run_id: run_id.into(),
            })
            .await
            .expect("GetRun")
            .into_inner()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

pub(crate) fn resume_request(
    run_id: &str,
    tool_call_id: &str,
    answer: pb::resume_request::Answer,
) -> pb::ResumeRequest {
    pb::ResumeRequest {
        run_id: run_id.into(),
        tool_call_id: tool_call_id.into(),
        answer: Some(answer),
        request_id: String::new(),
        answers: Vec::new(),
    }
}

/// Reads a stream to its end; a stream must close OK.
pub(crate) async fn collect(mut stream: tonic::Streaming<AgentChunk>) -> Result<Vec<AgentChunk>, Status> {
    let mut chunks = Vec::new();
    while let Some(chunk) = stream.message().await? {
        chunks.push(chunk);
    }
    Ok(chunks)
}

pub(crate) fn run_id(chunks: &[AgentChunk]) -> String {
    chunks.first().expect("at least one chunk").run_id.clone()
}

/// The kinds of the chunks, in order, e.g. `["start", "step_start", ...]`.
pub(crate) fn kinds(chunks: &[AgentChunk]) -> Vec<&'static str> {
    chunks
        .iter()
        .map(|c| match c.chunk.as_ref().expect("chunk kind") {
            Chunk::Start(_) => "start",
            Chunk::StepStart(_) => "step_start",
            Chunk::TextDelta(_) => "text_delta",
            Chunk::ToolCall(_) => "tool_call",
            Chunk::ToolResult(_) => "tool_result",
            Chunk::ToolCallSuspended(_) => "tool_call_suspended",
            Chunk::ToolCallApproval(_) => "tool_call_approval",
            Chunk::StepFinish(_) => "step_finish",
            Chunk::Finish(_) => "finish",
            Chunk::Error(_) => "error",
        })
        .collect()
}

pub(crate) fn finish(chunks: &[AgentChunk]) -> pb::RunFinished {
    match chunks.last().and_then(|c| c.chunk.clone()) {
        Some(Chunk::Finish(finish)) => finish,
        other => panic!("stream did not end with finish: {other:?}"),
    }
}

pub(crate) fn finish_reason(chunks: &[AgentChunk]) -> pb::FinishReason {
    pb::FinishReason::try_from(finish(chunks).reason).expect("known reason")
}

pub(crate) fn suspensions(chunks: &[AgentChunk]) -> Vec<pb::ToolCallSuspended> {
    chunks
        .iter()
        .filter_map(|c| match &c.chunk {
            Some(Chunk::ToolCallSuspended(s)) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

pub(crate) fn ask_user_payload(suspended: &pb::ToolCallSuspended) -> pb::AskUserPayload {
    match suspended.suspend_payload.as_ref().and_then(|p| p.kind.clone()) {
        Some(pb::suspend_payload::Kind::AskUser(payload)) => payload,
        other => panic!("not an ask_user payload: {other:?}"),
    }
}

pub(crate) fn tool_results(chunks: &[AgentChunk]) -> Vec<pb::ToolResult> {
    chunks
        .iter()
        .filter_map(|c| match &c.chunk {
            Some(Chunk::ToolResult(r)) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

pub(crate) fn text(chunks: &[AgentChunk]) -> String {
    chunks
        .iter()
        .filter_map(|c| match &c.chunk {
            Some(Chunk::TextDelta(d)) => Some(d.text.as_str()),
            _ => None,
        })
        .collect()
}

pub(crate) fn status_of(run: &pb::Run) -> pb::RunStatus {
    pb::RunStatus::try_from(run.status).expect("known status")
}

/// Asserts the call failed with `code` and returns the status.
pub(crate) fn expect_code<T: std::fmt::Debug>(result: Result<T, Status>, code: Code) -> Status {
    match result {
        Err(status) if status.code() == code => status,
        other => panic!("expected {code:?}, got {other:?}"),
    }
}

/// Asserts `chunks` is a first stream whose one step made one call that
/// suspended the run (`pending` is the chunk that says so:
/// `tool_call_suspended` or `tool_call_approval`), and that GetRun agrees:
/// SUSPENDED after the stream's last chunk, with one call pending. Returns
/// that pending call.
pub(crate) async fn expect_one_pending(
    server: &TestServer,
    chunks: &[AgentChunk],
    pending: &str,
) -> pb::PendingToolCall {
    assert_eq!(
        kinds(chunks),
        [
            "start",
            "step_start",
            "tool_call",
            "step_finish",
            pending,
            "finish"
        ]
    );
    assert_eq!(finish_reason(chunks), pb::FinishReason::Suspended);
    let mut run = server.get_run(&run_id(chunks)).await;
    assert_eq!(status_of(&run), pb::RunStatus::Suspended);
    assert_eq!(run.last_seq, chunks.last().unwrap().seq);
    assert_eq!(run.pending.len(), 1, "{:?}", run.pending);
    run.pending.remove(0)
}

/// Like [`expect_one_pending`] for a call that ran and suspended: GetRun
/// keeps the streamed suspension's call and payload. Returns the
/// suspension.
pub(crate) async fn expect_one_suspension(
    server: &TestServer,
    chunks: &[AgentChunk],
) -> pb::ToolCallSuspended {
    let pending = expect_one_pending(server, chunks, "tool_call_suspended").await;
    let suspended = suspensions(chunks).remove(0);
    assert_eq!(pending.tool_call_id, suspended.tool_call_id);
    assert_eq!(pending.tool_name, suspended.tool_name);
    assert_eq!(pending.suspend_payload, suspended.suspend_payload);
    assert!(!pending.awaiting_approval);
    suspended
}

/// Asserts the contract of one stream of a run segment: it opens with
/// `start`, its seqs rise by exactly one, and it ends with its one `finish`.
pub(crate) fn assert_segment(chunks: &[AgentChunk]) {
    let kinds = kinds(chunks);
    assert_eq!(
        kinds.first(),
        Some(&"start"),
        "a stream opens with start: {kinds:?}"
    );
    let finishes = kinds.iter().filter(|kind| **kind == "finish").count();
    assert_eq!(finishes, 1, "a stream has exactly one finish: {kinds:?}");
    assert_eq!(
        kinds.last(),
        Some(&"finish"),
        "a stream ends with its finish: {kinds:?}"
    );
    let first = chunks[0].seq;
    let seqs: Vec<u64> = chunks.iter().map(|chunk| chunk.seq).collect();
    let expected: Vec<u64> = (first..first + chunks.len() as u64).collect();
    assert_eq!(seqs, expected, "seqs rise by exactly one");
}

/// A plain HTTP client, as the server builds its own (rustls with ring).
pub(crate) fn http() -> reqwest::Client {
    agentd::http_client::builder().build().expect("an HTTP client")
}
