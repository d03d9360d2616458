//! Command-line arguments of `agentd bench` and its scenarios.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

/// `agentd bench SCENARIO`; its help text is the doc of the `Bench` command
/// in `main.rs`.
#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub scenario: Scenario,
}

#[derive(Subcommand)]
pub enum Scenario {
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
pub struct TargetArgs {
    /// Measure the agentd serving at ADDR instead of starting one.
    #[arg(long, value_name = "ADDR")]
    pub target: Option<SocketAddr>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// How hard and how long to drive the cycle.
#[derive(Args, Clone, Debug)]
pub struct LoadArgs {
    /// Cycles in flight; a list (`-c 1,16,64,256`) runs each in turn.
    #[arg(short = 'c', long, value_delimiter = ',', default_value = "64")]
    pub concurrency: Vec<usize>,
    /// How long to measure, after the warm-up (`10s`, `500ms`, `1m`).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// How long to run before measuring.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Clients that share one HTTP/2 connection (16 workers per connection
    /// by default: 64 in flight use 4 connections).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    pub per_connection: u64,
}

/// How the ceiling service stores its one write per RPC.
#[derive(Args, Clone, Debug)]
pub struct CeilingOptions {
    /// SQLite `synchronous` of the ceiling service (agentd's store uses FULL).
    #[arg(long, value_enum, default_value_t = SyncMode::Full)]
    pub ceiling_sync: SyncMode,
    /// Commit each write in its own transaction instead of grouping the
    /// writes that wait together into one commit.
    #[arg(long)]
    pub ceiling_naive: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SyncMode {
    Normal,
    Full,
}

impl SyncMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::Full => "full",
        }
    }
}

#[derive(Args, Clone, Debug)]
pub struct CycleArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub ceiling: CeilingOptions,
    /// Skip the ceiling run (and the ratio).
    #[arg(long)]
    pub no_ceiling: bool,
}

#[derive(Args, Clone, Debug)]
pub struct CeilingArgs {
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: LoadArgs,
    #[command(flatten)]
    pub ceiling: CeilingOptions,
}

#[derive(Args, Clone, Debug)]
pub struct StreamArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Text deltas the run streams.
    #[arg(long, default_value_t = 100_000)]
    pub deltas: u64,
}

#[derive(Args, Clone, Debug)]
pub struct CapacityArgs {
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
pub struct CeilingServerArgs {
    #[arg(long)]
    pub listen: SocketAddr,
    #[arg(long)]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub options: CeilingOptions,
}

/// Parses `10s`, `500ms`, `2m` or a plain number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 10s, 500ms or 1m"))?;
    let seconds = match unit.trim() {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" | "min" => number * 60.0,
        other => return Err(format!("unknown unit {other:?}: use ms, s or m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("3h").is_err());
    }
}
