//! The client side of one ask_user cycle: StreamAgent to `finish{SUSPENDED}`,
//! then Resume to `finish{STOP}`, each leg checked chunk by chunk. Anything
//! else (a non-OK status, a wrong or missing finish) is a [`Failure`].

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::pb::agent_chunk::Chunk;
use crate::pb::agent_service_client::AgentServiceClient;
use crate::pb::{self, FinishReason};
use anyhow::Context;
use tonic::transport::{Channel, Endpoint};

/// The prompt of a cycle: the scripted model asks a single-select question
/// (a plan: Basic, Pro or Enterprise).
pub(super) const CYCLE_PROMPT: &str = "Help me pick a plan";
/// The answer every cycle gives.
pub(super) const CYCLE_ANSWER: &str = "Pro";

pub(super) type Client = AgentServiceClient<Channel>;

/// `count` HTTP/2 connections to `addr`.
pub(super) async fn connect(addr: SocketAddr, count: usize) -> anyhow::Result<Vec<Client>> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10));
    let mut clients = Vec::with_capacity(count);
    for _ in 0..count {
        let channel = endpoint
            .connect()
            .await
            .with_context(|| format!("connecting to {addr}"))?;
        clients.push(AgentServiceClient::new(channel).max_decoding_message_size(64 << 20));
    }
    Ok(clients)
}

/// Why a leg or a cycle failed: a short kind to count by, and the detail.
#[derive(Debug)]
pub(super) struct Failure {
    pub kind: String,
    pub detail: String,
}

impl Failure {
    pub(super) fn status(status: &tonic::Status) -> Self {
        Self {
            kind: format!("status {:?}", status.code()),
            detail: status.message().to_owned(),
        }
    }

    fn protocol(kind: &str, detail: String) -> Self {
        Self {
            kind: kind.to_owned(),
            detail,
        }
    }
}

/// A run suspended on ask_user.
#[derive(Clone, Debug)]
pub(super) struct Suspended {
    pub run_id: String,
    pub tool_call_id: String,
}

/// Times of one cycle.
#[derive(Clone, Copy, Debug)]
pub(super) struct CycleTimes {
    /// StreamAgent sent -> finish{SUSPENDED} received.
    pub start: Duration,
    /// Resume sent -> finish{STOP} received.
    pub resume: Duration,
}

/// What a stream carried, checked as it arrives.
struct Leg {
    run_id: String,
    suspended_call: Option<String>,
    chunks: u64,
}

/// Reads a stream to its end; it must close OK right after exactly one
/// `finish` with reason `expected`.
async fn read_leg(
    mut stream: tonic::Streaming<pb::AgentChunk>,
    expected: FinishReason,
) -> Result<Leg, Failure> {
    let mut leg = Leg {
        run_id: String::new(),
        suspended_call: None,
        chunks: 0,
    };
    let mut finish = None;
    while let Some(chunk) = stream.message().await.map_err(|s| Failure::status(&s))? {
        if finish.is_some() {
            return Err(Failure::protocol("chunk after finish", format!("{chunk:?}")));
        }
        leg.chunks += 1;
        if leg.run_id.is_empty() {
            leg.run_id = chunk.run_id;
        }
        match chunk.chunk {
            Some(Chunk::ToolCallSuspended(suspended)) => leg.suspended_call = Some(suspended.tool_call_id),
            Some(Chunk::Finish(done)) => finish = Some(done.reason),
            _ => {}
        }
    }
    match finish {
        Some(reason) if reason == expected as i32 => Ok(leg),
        Some(reason) => Err(Failure::protocol(
            "wrong finish",
            format!(
                "expected {}, got {}",
                expected.as_str_name(),
                FinishReason::try_from(reason).map_or("an unknown reason", |r| r.as_str_name())
            ),
        )),
        None => Err(Failure::protocol(
            "no finish",
            format!("the stream closed after {} chunks without a finish", leg.chunks),
        )),
    }
}

/// Starts a run with the cycle prompt and reads it to its suspension.
pub(super) async fn start_suspended(client: &mut Client) -> Result<Suspended, Failure> {
    let request = pb::StreamAgentRequest {
        prompt: CYCLE_PROMPT.to_owned(),
        ..Default::default()
    };
    let stream = client
        .stream_agent(request)
        .await
        .map_err(|s| Failure::status(&s))?
        .into_inner();
    let leg = read_leg(stream, FinishReason::Suspended).await?;
    let tool_call_id = leg.suspended_call.ok_or_else(|| {
        Failure::protocol(
            "no suspension",
            "finish{SUSPENDED} without tool_call_suspended".into(),
        )
    })?;
    Ok(Suspended {
        run_id: leg.run_id,
        tool_call_id,
    })
}

/// Answers a suspended run and reads it to finish{STOP}.
pub(super) async fn resume_to_stop(client: &mut Client, run: &Suspended) -> Result<(), Failure> {
    let request = pb::ResumeRequest {
        run_id: run.run_id.clone(),
        tool_call_id: run.tool_call_id.clone(),
        answer: Some(pb::resume_request::Answer::Text(CYCLE_ANSWER.to_owned())),
        ..Default::default()
    };
    let stream = client
        .resume(request)
        .await
        .map_err(|s| Failure::status(&s))?
        .into_inner();
    read_leg(stream, FinishReason::Stop).await.map(|_| ())
}

/// One whole cycle, timed leg by leg.
pub(super) async fn cycle(client: &mut Client) -> Result<CycleTimes, Failure> {
    let began = Instant::now();
    let run = start_suspended(client).await?;
    let suspended = Instant::now();
    resume_to_stop(client, &run).await?;
    Ok(CycleTimes {
        start: suspended - began,
        resume: suspended.elapsed(),
    })
}
