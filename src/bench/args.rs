//! Command-line arguments of `agentd bench` and its scenarios.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::duration;
use clap::{Args, Subcommand, ValueEnum};

/// `agentd bench SCENARIO`; its help text is the doc of the `Bench` command
/// in `main.rs`.
#[derive(Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    pub scenario: Scenario,
}

#[derive(Subcommand)]
pub(crate) enum Scenario {
    /// StreamAgent -> tool_call_suspended -> Resume -> finish{STOP}, by N
    /// concurrent clients; then the same against the ceiling service, and
    /// the ratio of the two.
    Cycle(CycleArgs),
    /// The cycle against the ceiling service only.
    Ceiling(CeilingArgs),
    /// One run streaming N text deltas: chunks/s and bytes/s received, then
    /// a replay that checks every chunk was persisted.
    Stream(StreamArgs),
    /// K suspended runs: server memory and store bytes per run, resume
    /// latency at K, and time to readiness on the full store.
    Capacity(CapacityArgs),
    /// The ceiling service itself (started by the other scenarios).
    #[command(hide = true)]
    CeilingServer(CeilingServerArgs),
}

/// Where the measured agentd is, and how to print the report.
#[derive(Args, Clone, Debug)]
pub(crate) struct TargetArgs {
    /// Measure the agentd serving at ADDR instead of starting one.
    #[arg(long, value_name = "ADDR")]
    pub target: Option<SocketAddr>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// How hard and how long to drive the cycle.
#[derive(Args, Clone, Debug)]
pub(crate) struct LoadArgs {
    /// Cycles in flight; a list (`-c 1,16,64,256`) runs each in turn.
    #[arg(short = 'c', long, value_delimiter = ',', default_value = "64")]
    pub concurrency: Vec<usize>,
    /// How long to measure, after the warm-up (`10s`, `500ms`, `1m`, `1m30s`).
    #[arg(long, default_value = "10s", value_parser = duration::parse)]
    pub duration: Duration,
    /// How long to run before measuring.
    #[arg(long, default_value = "2s", value_parser = duration::parse)]
    pub warmup: Duration,
    /// Clients that share one HTTP/2 connection (16 workers per connection
    /// by default: 64 in flight use 4 connections).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    pub per_connection: u64,
}

/// How the ceiling service stores its one write per RPC.
#[derive(Args, Clone, Debug)]
pub(crate) struct CeilingOptions {
    /// SQLite `synchronous` of the ceiling service (agentd's store uses FULL).
    #[arg(long, value_enum, default_value_t = SyncMode::Full)]
    pub ceiling_sync: SyncMode,
    /// Commit each write in its own transaction instead of grouping the
    /// writes that wait together into one commit.
    #[arg(long)]
    pub ceiling_naive: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum SyncMode {
    Normal,
    Full,
}

impl SyncMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Full => "full",
        }
    }
}

#[derive(Args, Clone, Debug)]
pub(crate) struct CycleArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub ceiling: CeilingOptions,
    /// Skip the ceiling run (and the ratio).
    #[arg(long)]
    pub no_ceiling: bool,
    /// Alternate agentd and the ceiling this many times at each level,
    /// each round measured for `--duration` ÷ N after its own warm-up, so
    /// that a machine whose speed drifts slows both alike; the ratio is of
    /// the rounds together, and the report gives each round's too.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// Run agentd and the ceiling on this PostgreSQL database
    /// (`postgres://USER@HOST:PORT/DB`), each in a fresh schema dropped
    /// afterwards, and report per cycle the statements, round trips and
    /// CPU of the database's backends too.
    #[arg(long, value_name = "URL", conflicts_with = "target")]
    pub store: Option<String>,
}

#[derive(Args, Clone, Debug)]
pub(crate) struct CeilingArgs {
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub ceiling: CeilingOptions,
}

#[derive(Args, Clone, Debug)]
pub(crate) struct StreamArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Text deltas the run streams.
    #[arg(long, default_value_t = 100_000)]
    pub deltas: u64,
}

#[derive(Args, Clone, Debug)]
pub(crate) struct CapacityArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Suspended runs to create (10000, 100000 or 1000000 to see how the
    /// server scales).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub runs: u64,
    /// Runs created concurrently.
    #[arg(short = 'c', long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: u64,
    /// Resumes of randomly chosen runs timed at K, one at a time.
    #[arg(long, default_value_t = 200)]
    pub sample: u64,
}

#[derive(Args, Clone, Debug)]
pub(crate) struct CeilingServerArgs {
    #[arg(long)]
    pub listen: SocketAddr,
    #[arg(long)]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub options: CeilingOptions,
    /// Store in this PostgreSQL database (its URL's search path selects
    /// the schema) instead of SQLite in the data folder.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Load {
        #[command(flatten)]
        load: LoadArgs,
    }

    #[test]
    fn durations_are_written_with_units() {
        let parsed = Load::try_parse_from(["bench", "--duration", "1m30s", "--warmup", "500ms"]).unwrap();
        assert_eq!(parsed.load.duration, Duration::from_secs(90));
        assert_eq!(parsed.load.warmup, Duration::from_millis(500));
        let defaults = Load::try_parse_from(["bench"]).unwrap();
        assert_eq!(defaults.load.duration, Duration::from_secs(10));
        assert_eq!(defaults.load.warmup, Duration::from_secs(2));
        assert!(Load::try_parse_from(["bench", "--duration", "10"]).is_err());
        assert!(Load::try_parse_from(["bench", "--warmup", "ten"]).is_err());
    }
}
