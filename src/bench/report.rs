//! Reports on stdout: a table for people, or JSON (`--json`) for machines.

use std::fmt::Write as _;

use serde::Serialize;

use super::args::CeilingOptions;
use super::load::{LoadResult, PerCycle};
use super::stats::{Errors, LatencySummary};

#[derive(Debug, Serialize)]
pub(super) struct CycleReport {
    pub scenario: &'static str,
    /// `spawned` or the address given with `--target`.
    pub agentd: String,
    /// Where both servers store: `sqlite`, or PostgreSQL and how it commits
    /// (for `--target`, the ceiling's is SQLite and agentd's its own).
    pub store: String,
    /// How the ceiling service stored its writes; absent with `--no-ceiling`.
    pub ceiling: Option<CeilingConfig>,
    pub warmup_secs: f64,
    pub duration_secs: f64,
    /// agentd and the ceiling alternated this many times at each level.
    pub rounds: u32,
    pub per_connection: u64,
    pub levels: Vec<Level>,
}

/// How the ceiling commits: on SQLite as `--ceiling-sync` and
/// `--ceiling-naive` say; on PostgreSQL as the database does.
#[derive(Clone, Debug, Serialize)]
pub(super) struct CeilingConfig {
    /// SQLite's `synchronous`, or PostgreSQL's `synchronous_commit`.
    pub synchronous: String,
    pub group_commit: bool,
    pub store: CeilingStore,
}

/// Where the ceiling stores its writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum CeilingStore {
    Sqlite,
    Postgres,
}

impl From<&CeilingOptions> for CeilingConfig {
    fn from(options: &CeilingOptions) -> Self {
        Self {
            synchronous: options.ceiling_sync.as_str().to_owned(),
            group_commit: !options.ceiling_naive,
            store: CeilingStore::Sqlite,
        }
    }
}

impl CeilingConfig {
    /// The PostgreSQL ceiling: its pool commits as agentd's does, with the
    /// database's `synchronous_commit`, PostgreSQL grouping the commits
    /// that wait together.
    pub(super) fn postgres(synchronous_commit: &str) -> Self {
        Self {
            synchronous: synchronous_commit.to_owned(),
            group_commit: true,
            store: CeilingStore::Postgres,
        }
    }
}

#[derive(Debug, Serialize)]
pub(super) struct Level {
    pub concurrency: usize,
    pub agentd: Option<LoadResult>,
    pub ceiling: Option<LoadResult>,
    /// agentd cycles/s ÷ ceiling cycles/s.
    pub ratio: Option<f64>,
    /// The ratio of each round, in order, when there were several
    /// (`--rounds`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub round_ratios: Vec<f64>,
    /// The median of `round_ratios`: unlike `ratio`, barely moved by one
    /// round that a burst of the machine's load fell on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_round_ratio: Option<f64>,
    /// What a cycle cost agentd (and PostgreSQL), when agentd was spawned.
    pub agentd_per_cycle: Option<PerCycle>,
    pub ceiling_per_cycle: Option<PerCycle>,
}

#[derive(Debug, Serialize)]
pub(super) struct StreamReport {
    pub scenario: &'static str,
    pub agentd: String,
    pub deltas: u64,
    pub run_id: String,
    pub chunks: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub first_chunk_ms: f64,
    pub chunks_per_sec: f64,
    pub bytes_per_sec: f64,
    /// Chunks SubscribeRun(run_id, 0) returned.
    pub replayed: u64,
    pub replay_seconds: f64,
    pub replay_chunks_per_sec: f64,
    /// The replay returned exactly as many chunks, with the same seqs.
    pub all_persisted: bool,
    pub errors: Errors,
}

#[derive(Debug, Serialize)]
pub(super) struct CapacityReport {
    pub scenario: &'static str,
    pub agentd: String,
    pub runs: u64,
    pub concurrency: u64,
    /// Runs that reached finish{SUSPENDED}.
    pub suspended: u64,
    pub create_seconds: f64,
    pub create_runs_per_sec: f64,
    /// Server resident memory before the first run and after the last.
    pub rss_before: Option<u64>,
    pub rss_after: Option<u64>,
    pub rss_peak: Option<u64>,
    /// The data folder's files after the runs, as they are (the WAL is not
    /// checkpointed first).
    pub store_files: Option<Vec<(String, u64)>>,
    pub store_bytes: Option<u64>,
    /// Growth of the data folder (database, WAL and WAL index) divided by
    /// the suspended runs.
    pub store_bytes_per_run: Option<f64>,
    /// The database file alone divided by the suspended runs (what the WAL
    /// still holds is missing from it).
    pub store_db_bytes_per_run: Option<f64>,
    /// Resume -> finish{STOP} of randomly chosen suspended runs, one at a time.
    pub resume: LatencySummary,
    pub restart: Option<Restart>,
    pub errors: Errors,
}

#[derive(Debug, Serialize)]
pub(super) struct Restart {
    /// Process start -> `listening on` logged.
    pub listening_ms: f64,
    /// Process start -> first ListAgents answered.
    pub first_call_ms: f64,
}

/// Prints `report` as pretty JSON, or as the table `table` draws.
pub(super) fn print<T: Serialize>(report: &T, json: bool, table: fn(&T) -> String) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", table(report));
    }
    Ok(())
}

/// Bytes (a count, a rate or a difference) in MiB.
fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

fn three(l: &LatencySummary) -> String {
    format!("{:.2} / {:.2} / {:.2}", l.p50_ms, l.p90_ms, l.p99_ms)
}

fn two(l: &LatencySummary) -> String {
    format!("{:.2} / {:.2}", l.p50_ms, l.p99_ms)
}

fn load_row(out: &mut String, server: &str, r: &LoadResult) {
    let _ = writeln!(
        out,
        "{server:<8} {:>9} {:>5} {:>8} {:>10.0}  {:<22} {:<14} {:<14} {}",
        r.concurrency,
        r.connections,
        r.cycles,
        r.cycles_per_sec,
        three(&r.cycle),
        two(&r.start_leg),
        two(&r.resume_leg),
        r.errors.describe(),
    );
}

pub(super) fn cycle_table(report: &CycleReport) -> String {
    let mut out = String::new();
    let ceiling = match &report.ceiling {
        Some(c) if c.store == CeilingStore::Postgres => format!(
            "ceiling: synchronous_commit={}, PostgreSQL's group commit",
            c.synchronous
        ),
        Some(c) => format!(
            "ceiling: synchronous={}, {}",
            c.synchronous,
            if c.group_commit {
                "group commit"
            } else {
                "one commit per write"
            }
        ),
        None => "no ceiling".to_owned(),
    };
    let _ = writeln!(
        out,
        "{}: agentd {}; store {}; {ceiling}; {}, {} clients per HTTP/2 connection\n",
        report.scenario,
        report.agentd,
        report.store,
        match report.rounds {
            0 | 1 => format!(
                "warm-up {}s, measured {}s",
                report.warmup_secs, report.duration_secs
            ),
            rounds => format!(
                "{rounds} alternated rounds, each a warm-up of {}s and {:.3}s measured ({}s in all)",
                report.warmup_secs,
                report.duration_secs / f64::from(rounds),
                report.duration_secs
            ),
        },
        report.per_connection
    );
    let _ = writeln!(
        out,
        "{:<8} {:>9} {:>5} {:>8} {:>10}  {:<22} {:<14} {:<14} errors",
        "server",
        "in flight",
        "conns",
        "cycles",
        "cycles/s",
        "cycle p50/p90/p99 ms",
        "start p50/p99",
        "resume p50/p99"
    );
    for level in &report.levels {
        if let Some(r) = &level.agentd {
            load_row(&mut out, "agentd", r);
        }
        if let Some(r) = &level.ceiling {
            load_row(&mut out, "ceiling", r);
        }
        if let Some(ratio) = level.ratio {
            let rounds = match (level.round_ratios.as_slice(), level.median_round_ratio) {
                ([], _) | (_, None) => String::new(),
                (each, Some(median)) => {
                    let each: Vec<String> = each.iter().map(|r| format!("{r:.2}")).collect();
                    format!(" (rounds: {}; median {median:.2})", each.join(" / "))
                }
            };
            let _ = writeln!(
                out,
                "agentd ÷ ceiling at {} in flight: {ratio:.2}{rounds}",
                level.concurrency
            );
        }
        for (server, cost) in [
            ("agentd", &level.agentd_per_cycle),
            ("ceiling", &level.ceiling_per_cycle),
        ] {
            if let Some(cost) = cost {
                let _ = writeln!(out, "  per {server} cycle: {}", per_cycle(cost));
            }
        }
    }
    out
}

/// What a cycle cost, in words: only the figures that were read.
fn per_cycle(cost: &PerCycle) -> String {
    let mut parts = Vec::new();
    if let Some(ms) = cost.server_cpu_ms {
        parts.push(format!("{ms:.3} ms server CPU"));
    }
    if let Some(ms) = cost.postgres_cpu_ms {
        parts.push(format!("{ms:.3} ms PostgreSQL backend CPU"));
    }
    if let Some(n) = cost.statements {
        parts.push(format!("{n:.1} statements"));
    }
    if let Some(n) = cost.round_trips {
        parts.push(format!("{n:.1} round trips"));
    }
    parts.join(", ")
}

pub(super) fn stream_table(r: &StreamReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "stream: agentd {}; one run of {} text deltas\n",
        r.agentd, r.deltas
    );
    let _ = writeln!(out, "chunks received      {}", r.chunks);
    let _ = writeln!(
        out,
        "bytes received       {} ({:.1} MiB, encoded AgentChunk sizes)",
        r.bytes,
        mib(r.bytes as f64)
    );
    let _ = writeln!(
        out,
        "time to finish       {:.3} s (first chunk after {:.2} ms)",
        r.seconds, r.first_chunk_ms
    );
    let _ = writeln!(out, "chunks/s             {:.0}", r.chunks_per_sec);
    let _ = writeln!(
        out,
        "bytes/s              {:.0} ({:.1} MiB/s)",
        r.bytes_per_sec,
        mib(r.bytes_per_sec)
    );
    let _ = writeln!(
        out,
        "replayed from store  {} in {:.3} s ({:.0} chunks/s): {}",
        r.replayed,
        r.replay_seconds,
        r.replay_chunks_per_sec,
        if r.all_persisted {
            "every chunk persisted"
        } else {
            "MISSING CHUNKS"
        }
    );
    let _ = writeln!(out, "errors               {}", r.errors.describe());
    out
}

fn memory(bytes: Option<u64>) -> String {
    bytes.map_or("n/a".into(), |b| format!("{:.1} MiB", mib(b as f64)))
}

pub(super) fn capacity_table(r: &CapacityReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "capacity: agentd {}; {} suspended runs, {} at a time\n",
        r.agentd, r.runs, r.concurrency
    );
    let _ = writeln!(
        out,
        "runs suspended        {} in {:.1} s ({:.0} runs/s)",
        r.suspended, r.create_seconds, r.create_runs_per_sec
    );
    let _ = writeln!(out, "server RSS before     {}", memory(r.rss_before));
    let _ = writeln!(
        out,
        "server RSS after      {} (peak {})",
        memory(r.rss_after),
        memory(r.rss_peak)
    );
    if let (Some(before), Some(after)) = (r.rss_before, r.rss_after) {
        let _ = writeln!(
            out,
            "RSS growth            {:.1} MiB",
            mib(after as f64 - before as f64)
        );
    }
    match (&r.store_files, r.store_bytes_per_run) {
        (Some(files), Some(per_run)) => {
            let list: Vec<String> = files
                .iter()
                .map(|(name, size)| format!("{name} {:.1} MiB", mib(*size as f64)))
                .collect();
            let _ = writeln!(
                out,
                "store files           {} (as they are: WAL not checkpointed)",
                list.join(", ")
            );
            let _ = writeln!(out, "store bytes per run   {per_run:.0} (database + WAL)");
            if let Some(db) = r.store_db_bytes_per_run {
                let _ = writeln!(out, "                      {db:.0} (database file alone)");
            }
        }
        _ => {
            let _ = writeln!(out, "store bytes per run   n/a (remote server)");
        }
    }
    let _ = writeln!(
        out,
        "resume at K           p50 {:.2} ms, p99 {:.2} ms ({} sampled, one at a time)",
        r.resume.p50_ms, r.resume.p99_ms, r.resume.count
    );
    if let Some(ready) = &r.restart {
        let _ = writeln!(
            out,
            "restart on this store listening after {:.0} ms, first call answered after {:.0} ms",
            ready.listening_ms, ready.first_call_ms
        );
    }
    let _ = writeln!(out, "errors                {}", r.errors.describe());
    out
}
