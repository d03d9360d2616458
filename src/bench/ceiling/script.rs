//! The chunks the ceiling service streams: recorded once, at its start, from
//! a real agentd cycle (an in-process agentd with a memory store on an
//! ephemeral loopback port), so that both services send the same chunk
//! sequences with the same message sizes.

use crate::config::Overrides;
use crate::pb::{self, AgentChunk};
use crate::server;
use crate::server::FileConfig;
use anyhow::{ensure, Context};
use tokio::net::TcpListener;

use crate::bench::client::{self, CYCLE_ANSWER, CYCLE_PROMPT};

/// The two streams of one cycle.
pub(super) struct Script {
    /// StreamAgent, `start` to `finish{SUSPENDED}`.
    pub start: Vec<AgentChunk>,
    /// Resume, `start{resumed}` to `finish{STOP}`.
    pub resume: Vec<AgentChunk>,
}

async fn collect(stream: tonic::Streaming<AgentChunk>) -> anyhow::Result<Vec<AgentChunk>> {
    let mut stream = stream;
    let mut chunks = Vec::new();
    while let Some(chunk) = stream.message().await? {
        chunks.push(chunk);
    }
    Ok(chunks)
}

/// Runs one cycle on an in-process agentd and keeps its chunks.
pub(super) async fn record() -> anyhow::Result<Script> {
    let mut settings = FileConfig::default().settle(Overrides::default());
    settings.server.store = Some("memory:".into());
    settings.server.sweep_interval = std::time::Duration::ZERO;
    let runtime = server::build_runtime(&settings)
        .await
        .context("building the recording agentd")?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server::serve(listener, runtime, async {
        let _ = stopped.await;
    }));

    let mut client = client::connect(addr, 1).await?.remove(0);
    let start = collect(
        client
            .stream_agent(pb::StreamAgentRequest {
                prompt: CYCLE_PROMPT.to_owned(),
                ..Default::default()
            })
            .await?
            .into_inner(),
    )
    .await?;
    let suspended = start
        .iter()
        .find_map(|chunk| match &chunk.chunk {
            Some(pb::agent_chunk::Chunk::ToolCallSuspended(s)) => Some(s.tool_call_id.clone()),
            _ => None,
        })
        .context("the recorded cycle did not suspend")?;
    let run_id = start.first().map(|c| c.run_id.clone()).unwrap_or_default();
    let resume = collect(
        client
            .resume(pb::ResumeRequest {
                run_id,
                tool_call_id: suspended,
                answer: Some(pb::resume_request::Answer::Text(CYCLE_ANSWER.to_owned())),
                ..Default::default()
            })
            .await?
            .into_inner(),
    )
    .await?;
    drop(client);
    let _ = stop.send(());
    serving.await??;
    ensure!(
        !start.is_empty() && !resume.is_empty(),
        "the recorded cycle streamed nothing"
    );
    Ok(Script { start, resume })
}
