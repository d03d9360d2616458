//! The execution of a run in this process: from the commit that gave this
//! replica the run (a start, a Resume's claim, a takeover: the lifecycle's)
//! to its next suspension or finish. `execute.rs` spawns it, with the
//! stream of its own client or detached; `drive.rs` is the step loop and
//! the transitions a running run makes itself (suspend, complete, fail, and
//! cancel once interrupted); `emitter.rs` numbers, stores and releases its
//! chunks and renews its lease (`lease.rs`). `run_agent.rs` is the agent it
//! runs with (the configured one plus the run's own tools), and
//! `standalone_tool.rs` ExecuteTool, one tool executed outside any run.
//!
//! Holds a tenant slot (`Inner::tenant_runs`, `crate::tenant_slots`) for
//! each execution and, while it runs, the run
//! itself: it holds the run's lease and is its only writer. It stores every
//! chunk before anybody sees it and hands the stored chunks to the fan-out
//! (its client's feed, the run's live entry), which delivers them. It never
//! decides what a client asks for: it learns of a cancel, or of the run
//! moving on elsewhere (fenced), through the run's live entry, and stops.
//!
//! Its API to the other parts: `Runtime::execute` and `execute_detached`,
//! `Inner::new_lease` and `Inner::agent_for_run`, and what is re-exported
//! below.

mod drive;
mod emitter;
mod execute;
mod lease;
mod recent;
mod run_agent;
mod standalone_tool;

pub(super) use emitter::Begin;
pub(crate) use emitter::Emitter;
pub(super) use execute::Work;
pub(crate) use lease::new_replica_id;
pub use lease::LeaseSettings;
pub(super) use lease::{lease_expired, unfinished_calls};
pub(super) use recent::RecentSuspensions;
pub(super) use run_agent::with_run_tools;
pub use standalone_tool::ExecuteTool;
