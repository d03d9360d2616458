//! The execution of a run in this process.

mod drive;
mod emitter;
mod execute;
mod lease;
mod run_agent;
mod tenant_runs;

pub use emitter::{Emitter, Staging};
pub(super) use execute::Work;
pub(super) use lease::{approved_unexecuted, lease_expired};
pub use lease::{new_replica_id, LeaseSettings};
pub(super) use run_agent::with_run_tools;
pub(super) use tenant_runs::TenantRuns;
