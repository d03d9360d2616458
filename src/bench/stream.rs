//! The `stream` scenario: one run streams N text deltas to one client;
//! chunks/s and bytes/s (encoded `AgentChunk` sizes) as received, then a
//! SubscribeRun replay from seq 0 that must return every chunk again.

use std::time::{Duration, Instant};

use crate::pb::agent_chunk::Chunk;
use crate::pb::{self, FinishReason};
use prost::Message as _;

use super::args::StreamArgs;
use super::client::{self, Client, Failure};
use super::process::{ScratchDir, ServerProcess};
use super::progress;
use super::report::{self, StreamReport};
use super::stats::{rate, Errors};

/// What a stream carried.
struct Received {
    run_id: String,
    chunks: u64,
    bytes: u64,
    /// Sum of the seqs, to compare the replay with.
    seq_sum: u64,
    finish: Option<i32>,
    first_chunk: Duration,
    elapsed: Duration,
}

async fn receive(
    mut stream: tonic::Streaming<pb::AgentChunk>,
    began: Instant,
    label: &str,
) -> Result<Received, Failure> {
    let bar = progress::spinner(label);
    let mut got = Received {
        run_id: String::new(),
        chunks: 0,
        bytes: 0,
        seq_sum: 0,
        finish: None,
        first_chunk: Duration::ZERO,
        elapsed: Duration::ZERO,
    };
    while let Some(chunk) = stream.message().await.map_err(|s| Failure::status(&s))? {
        if got.chunks == 0 {
            got.first_chunk = began.elapsed();
            got.run_id.clone_from(&chunk.run_id);
        }
        got.chunks += 1;
        got.bytes += chunk.encoded_len() as u64;
        got.seq_sum += chunk.seq;
        if let Some(Chunk::Finish(done)) = &chunk.chunk {
            got.finish = Some(done.reason);
        }
        if got.chunks.is_multiple_of(4096) {
            bar.set_message(format!("{} chunks", got.chunks));
        }
    }
    got.elapsed = began.elapsed();
    bar.finish_and_clear();
    Ok(got)
}

async fn measure(client: &mut Client, deltas: u64) -> Result<(Received, Received), Failure> {
    let request = pb::StreamAgentRequest {
        prompt: format!("stream {deltas}"),
        ..Default::default()
    };
    let began = Instant::now();
    let stream = client
        .stream_agent(request)
        .await
        .map_err(|s| Failure::status(&s))?
        .into_inner();
    let live = receive(stream, began, "streaming").await?;
    if live.finish != Some(FinishReason::Stop as i32) {
        return Err(Failure {
            kind: "wrong finish".into(),
            detail: format!("the stream ended with {:?}, not finish{{STOP}}", live.finish),
        });
    }
    let began = Instant::now();
    let replay = client
        .subscribe_run(pb::SubscribeRunRequest {
            run_id: live.run_id.clone(),
            after_seq: 0,
        })
        .await
        .map_err(|s| Failure::status(&s))?
        .into_inner();
    let replayed = receive(replay, began, "replaying").await?;
    Ok((live, replayed))
}

/// `agentd bench stream`.
pub(super) async fn run(args: StreamArgs) -> anyhow::Result<()> {
    let mut spawned = None;
    let addr = match args.target.target {
        Some(addr) => addr,
        None => {
            let dir = ScratchDir::new("stream")?;
            let process = ServerProcess::agentd(dir.path(), None).await?;
            let addr = process.addr;
            spawned = Some((process, dir));
            addr
        }
    };
    let mut client = client::connect(addr, 1).await?.remove(0);
    let mut report = StreamReport {
        scenario: "stream",
        agentd: args.target.target.map_or("spawned".into(), |a| a.to_string()),
        deltas: args.deltas,
        run_id: String::new(),
        chunks: 0,
        bytes: 0,
        seconds: 0.0,
        first_chunk_ms: 0.0,
        chunks_per_sec: 0.0,
        bytes_per_sec: 0.0,
        replayed: 0,
        replay_seconds: 0.0,
        replay_chunks_per_sec: 0.0,
        all_persisted: false,
        errors: Errors::default(),
    };
    match measure(&mut client, args.deltas).await {
        Ok((live, replayed)) => {
            report.run_id = live.run_id;
            report.chunks = live.chunks;
            report.bytes = live.bytes;
            report.seconds = live.elapsed.as_secs_f64();
            report.first_chunk_ms = live.first_chunk.as_secs_f64() * 1000.0;
            report.chunks_per_sec = rate(live.chunks, live.elapsed);
            report.bytes_per_sec = rate(live.bytes, live.elapsed);
            report.replayed = replayed.chunks;
            report.replay_seconds = replayed.elapsed.as_secs_f64();
            report.replay_chunks_per_sec = rate(replayed.chunks, replayed.elapsed);
            report.all_persisted = replayed.chunks == live.chunks && replayed.seq_sum == live.seq_sum;
            if !report.all_persisted {
                report.errors.record(Failure {
                    kind: "not persisted".into(),
                    detail: format!(
                        "received {} chunks, the replay returned {}",
                        live.chunks, replayed.chunks
                    ),
                });
            }
        }
        Err(failure) => report.errors.record(failure),
    }
    drop(spawned);
    report::print(&report, args.target.json, report::stream_table)
}
