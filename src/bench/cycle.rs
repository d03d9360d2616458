//! The `cycle` and `ceiling` scenarios: the ask_user cycle at each asked
//! concurrency, against agentd and then, with the same parameters, against
//! the ceiling service; the report divides the one by the other.

use std::net::SocketAddr;

use serde::Serialize;

use super::args::{CeilingArgs, CeilingOptions, CycleArgs, LoadArgs};
use super::load::{self, LoadResult};
use super::process::{ScratchDir, ServerProcess};
use super::report;

#[derive(Debug, Serialize)]
pub struct CycleReport {
    pub scenario: &'static str,
    /// `spawned` or the address given with `--target`.
    pub agentd: String,
    /// How the ceiling service stored its writes; absent with `--no-ceiling`.
    pub ceiling: Option<CeilingConfig>,
    pub warmup_secs: f64,
    pub duration_secs: f64,
    pub per_connection: u64,
    pub levels: Vec<Level>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CeilingConfig {
    pub synchronous: &'static str,
    pub group_commit: bool,
}

impl From<&CeilingOptions> for CeilingConfig {
    fn from(options: &CeilingOptions) -> Self {
        Self {
            synchronous: options.ceiling_sync.as_str(),
            group_commit: !options.ceiling_naive,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Level {
    pub concurrency: usize,
    pub agentd: Option<LoadResult>,
    pub ceiling: Option<LoadResult>,
    /// agentd cycles/s ÷ ceiling cycles/s.
    pub ratio: Option<f64>,
}

/// A server under test: started here (and its data folder), or remote.
struct Server {
    addr: SocketAddr,
    _process: Option<(ServerProcess, ScratchDir)>,
}

impl Server {
    async fn agentd(target: Option<SocketAddr>) -> anyhow::Result<Self> {
        if let Some(addr) = target {
            return Ok(Self { addr, _process: None });
        }
        let dir = ScratchDir::new("agentd")?;
        let process = ServerProcess::agentd(dir.path()).await?;
        Ok(Self {
            addr: process.addr,
            _process: Some((process, dir)),
        })
    }

    async fn ceiling(options: &CeilingOptions) -> anyhow::Result<Self> {
        let dir = ScratchDir::new("ceiling")?;
        let process =
            ServerProcess::ceiling(dir.path(), options.ceiling_sync.as_str(), options.ceiling_naive).await?;
        Ok(Self {
            addr: process.addr,
            _process: Some((process, dir)),
        })
    }
}

fn report_of(agentd: String, ceiling: Option<CeilingConfig>, load: &LoadArgs) -> CycleReport {
    CycleReport {
        scenario: "cycle",
        agentd,
        ceiling,
        warmup_secs: load.warmup.as_secs_f64(),
        duration_secs: load.duration.as_secs_f64(),
        per_connection: load.per_connection,
        levels: Vec::new(),
    }
}

/// `agentd bench cycle`.
pub async fn run(args: CycleArgs) -> anyhow::Result<()> {
    let agentd = Server::agentd(args.target.target).await?;
    let ceiling = match args.no_ceiling {
        true => None,
        false => Some(Server::ceiling(&args.ceiling).await?),
    };
    let name = match args.target.target {
        Some(addr) => addr.to_string(),
        None => "spawned".to_owned(),
    };
    let mut report = report_of(name, ceiling.as_ref().map(|_| (&args.ceiling).into()), &args.load);
    for &concurrency in &args.load.concurrency {
        let ours = load::drive("agentd", agentd.addr, concurrency, &args.load).await?;
        let theirs = match &ceiling {
            Some(server) => Some(load::drive("ceiling", server.addr, concurrency, &args.load).await?),
            None => None,
        };
        let ratio = theirs
            .as_ref()
            .filter(|c| c.cycles_per_sec > 0.0)
            .map(|c| ours.cycles_per_sec / c.cycles_per_sec);
        report.levels.push(Level {
            concurrency: ours.concurrency,
            agentd: Some(ours),
            ceiling: theirs,
            ratio,
        });
    }
    report::print(&report, args.target.json, report::cycle_table)
}

/// `agentd bench ceiling`: the ceiling service alone.
pub async fn run_ceiling_only(args: CeilingArgs) -> anyhow::Result<()> {
    let ceiling = Server::ceiling(&args.ceiling).await?;
    let mut report = report_of("none".to_owned(), Some((&args.ceiling).into()), &args.load);
    report.scenario = "ceiling";
    for &concurrency in &args.load.concurrency {
        let theirs = load::drive("ceiling", ceiling.addr, concurrency, &args.load).await?;
        report.levels.push(Level {
            concurrency: theirs.concurrency,
            agentd: None,
            ceiling: Some(theirs),
            ratio: None,
        });
    }
    report::print(&report, args.json, report::cycle_table)
}
