//! The `capacity` scenario: K runs suspended on ask_user, then the server's
//! resident memory and store size per suspended run, resume latency sampled
//! at K, and how soon a restarted server on that store answers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::pb;

use super::args::CapacityArgs;
use super::client::{self, Suspended};
use super::load::connections;
use super::process::{ScratchDir, ServerProcess};
use super::progress;
use super::report::{self, CapacityReport, Restart};
use super::stats::{rate, Errors, Latency, LatencySummary};

/// How long a restarted server may take to answer its first call.
const RESTART_LIMIT: Duration = Duration::from_secs(60);

/// `agentd bench capacity`.
pub(super) async fn run(args: CapacityArgs) -> anyhow::Result<()> {
    let (addr, mut spawned) = match args.target.target {
        Some(addr) => (addr, None),
        None => {
            let dir = ScratchDir::new("capacity")?;
            let process = ServerProcess::agentd(dir.path(), None).await?;
            (process.addr, Some((process, dir)))
        }
    };
    let rss_before = spawned.as_ref().and_then(|(p, _)| p.memory()).map(|m| m.rss);
    let store_before = match &spawned {
        Some((_, dir)) => Some(total(&dir.file_bytes()?)),
        None => None,
    };

    let began = Instant::now();
    let (runs, mut errors) = create(addr, &args).await?;
    let create_elapsed = began.elapsed();

    let memory = spawned.as_ref().and_then(|(p, _)| p.memory());
    let store_files = match &spawned {
        Some((_, dir)) => Some(dir.file_bytes()?),
        None => None,
    };
    let store_bytes = store_files.as_deref().map(total);
    let suspended = runs.len() as u64;
    let store_bytes_per_run = match (store_before, store_bytes) {
        (Some(before), Some(after)) if suspended > 0 => {
            Some(after.saturating_sub(before) as f64 / suspended as f64)
        }
        _ => None,
    };

    let store_db_bytes_per_run = store_files
        .as_deref()
        .map(|files| {
            files
                .iter()
                .filter(|(name, _)| !name.ends_with("-wal") && !name.ends_with("-shm"))
                .map(|(_, size)| size)
                .sum::<u64>()
        })
        .filter(|_| suspended > 0)
        .map(|bytes| bytes as f64 / suspended as f64);

    let resume = sample_resumes(addr, runs, args.sample, &mut errors).await?;
    let restart = match spawned.take() {
        Some((process, dir)) => {
            process.stop().await;
            Some(restart(&dir).await?)
        }
        None => None,
    };

    let report = CapacityReport {
        scenario: "capacity",
        agentd: args.target.target.map_or("spawned".into(), |a| a.to_string()),
        runs: args.runs,
        concurrency: args.concurrency,
        suspended,
        create_seconds: create_elapsed.as_secs_f64(),
        create_runs_per_sec: rate(suspended, create_elapsed),
        rss_before,
        rss_after: memory.map(|m| m.rss),
        rss_peak: memory.map(|m| m.peak),
        store_files,
        store_bytes,
        store_bytes_per_run,
        store_db_bytes_per_run,
        resume,
        restart,
        errors,
    };
    report::print(&report, args.target.json, report::capacity_table)
}

fn total(files: &[(String, u64)]) -> u64 {
    files.iter().map(|(_, size)| size).sum()
}

/// Suspends `args.runs` runs, `args.concurrency` at a time.
async fn create(addr: SocketAddr, args: &CapacityArgs) -> anyhow::Result<(Vec<Suspended>, Errors)> {
    let workers = usize::try_from(args.concurrency).unwrap_or(usize::MAX);
    let clients = client::connect(addr, connections(workers, 16)).await?;
    let next = Arc::new(AtomicU64::new(0));
    let found = Arc::new(Mutex::new((Vec::new(), Errors::default())));
    let bar = progress::counted("suspending runs", args.runs);
    let tasks: Vec<_> = (0..workers)
        .map(|index| {
            let mut client = clients[index % clients.len()].clone();
            let (next, found, bar, runs) = (Arc::clone(&next), Arc::clone(&found), bar.clone(), args.runs);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                let mut errors = Errors::default();
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    match client::start_suspended(&mut client).await {
                        Ok(run) => mine.push(run),
                        Err(failure) => errors.record(failure),
                    }
                    bar.inc(1);
                }
                let mut found = found.lock().unwrap_or_else(|p| p.into_inner());
                found.0.append(&mut mine);
                found.1.add(errors);
            })
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    bar.finish_and_clear();
    let mut found = found.lock().unwrap_or_else(|p| p.into_inner());
    Ok(std::mem::take(&mut *found))
}

/// A small xorshift generator: the sample only needs to be spread out.
struct Shuffle(u64);

impl Shuffle {
    fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| d.as_nanos() as u64);
        Self(nanos | 1)
    }

    fn below(&mut self, bound: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % bound.max(1) as u64) as usize
    }
}

/// Resumes `sample` randomly chosen runs one after another and times each.
async fn sample_resumes(
    addr: SocketAddr,
    mut runs: Vec<Suspended>,
    sample: u64,
    errors: &mut Errors,
) -> anyhow::Result<LatencySummary> {
    let mut client = client::connect(addr, 1).await?.remove(0);
    let mut latency = Latency::default();
    let mut shuffle = Shuffle::new();
    let count = usize::try_from(sample).unwrap_or(usize::MAX).min(runs.len());
    let bar = progress::counted("resuming a sample", count as u64);
    for taken in 0..count {
        let pick = taken + shuffle.below(runs.len() - taken);
        runs.swap(taken, pick);
        let began = Instant::now();
        match client::resume_to_stop(&mut client, &runs[taken]).await {
            Ok(()) => latency.record(began.elapsed()),
            Err(failure) => errors.record(failure),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(latency.summary())
}

/// Starts agentd again on the full store and times it to its first answer.
async fn restart(dir: &ScratchDir) -> anyhow::Result<Restart> {
    let began = Instant::now();
    let process = ServerProcess::agentd(dir.path(), None).await?;
    let listening = began.elapsed();
    let deadline = began + RESTART_LIMIT;
    let first_call = loop {
        let answered = match client::connect(process.addr, 1).await {
            Ok(mut clients) => clients[0].list_agents(pb::ListAgentsRequest {}).await.is_ok(),
            Err(_) => false,
        };
        if answered {
            break began.elapsed();
        }
        if Instant::now() > deadline {
            anyhow::bail!("the restarted server did not answer within {RESTART_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    process.stop().await;
    Ok(Restart {
        listening_ms: listening.as_secs_f64() * 1000.0,
        first_call_ms: first_call.as_secs_f64() * 1000.0,
    })
}
