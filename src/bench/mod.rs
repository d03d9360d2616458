//! `agentd bench`: measures the human-in-the-loop cycle (start a run, see it
//! suspend on ask_user, resume it, see it finish), streaming throughput,
//! the cost of holding suspended runs, and the ceiling a trivial service
//! reaches on the same machine. Each scenario starts the server it measures
//! as a separate process (or talks to `--target`), over loopback HTTP/2.
//! It only reports; it never changes how the server works.

mod args;
mod capacity;
mod ceiling;
mod client;
mod cycle;
mod load;
mod postgres;
mod process;
mod progress;
mod report;
mod stats;
mod stream;

pub(crate) use args::BenchArgs;

use args::Scenario;

/// Runs the scenario `args` names and prints its report.
pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.scenario {
        Scenario::Cycle(args) => cycle::run(args).await,
        Scenario::Ceiling(args) => cycle::run_ceiling_only(args).await,
        Scenario::Stream(args) => stream::run(args).await,
        Scenario::Capacity(args) => capacity::run(args).await,
        Scenario::CeilingServer(args) => ceiling::serve(args).await,
    }
}
