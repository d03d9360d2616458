//! The runtime starts, resumes and reads runs. It owns every state change of
//! a run and makes each one durable in the [`Store`] before any client can
//! see it. It knows nothing of gRPC or of any other protocol.
//!
//! One handle, [`Runtime`] (on the shared `Inner`). Its API, every
//! operation a surface calls, is `api.rs`, one screen; what the server
//! hosting it does with it (chores, health, shutdown) is `host.rs`. Behind
//! them, four parts, a folder each:
//!
//! - `lifecycle/`: the transitions clients and sweeps ask for: start,
//!   resume (`resume.rs` validates the answer, claims the suspension and
//!   commits the claim), cancel, expiry, the takeover of runs whose holder
//!   is gone, a turn on a thread, deleting threads. It decides and stores
//!   each one, then hands the run to the execution and the client to the
//!   fan-out.
//! - `execution/`: executing a run here, from the commit that gave it to
//!   this replica to its next suspension or finish: the step loop
//!   (`drive.rs`), the emitter that numbers, stores and releases its chunks
//!   (`emitter.rs`), its lease, its tenant's slot.
//! - `fanout/`: delivering stored chunks to clients: the registry of live
//!   runs, the stream a client reads (`stream.rs`), following a run
//!   (replay, then live), the feed of changes from other replicas.
//! - `reads/`: GetRun, ListRuns, GetThread, ListThreads and a thread's
//!   history; never a write.
//!
//! The lifecycle calls on the execution and the fan-out, the execution on
//! the fan-out, and every part may use the reads. Only the lifecycle and
//! the execution write runs. Each part's module says what it owns and what it
//! must not touch. Beside them: the deliveries made from the run events
//! (`delivery/`: webhooks and A2A push are its endpoints), A2A push
//! configurations (`push_configs.rs`), grants (`grants.rs`: made by a
//! Resume, used by an execution, listed and revoked), the handle's
//! settings, its errors (`error.rs`), the layer every store call goes
//! through (`store_layer.rs`), the store as the parts hold it, one handle
//! per trait (`tables.rs`: each part takes the handles of the tables it
//! touches) and the ticking of the periodic chores (`periodic.rs`).

mod api;
mod delivery;
mod error;
mod execution;
mod fanout;
mod grants;
mod host;
mod lifecycle;
mod lifecycle_log;
mod periodic;
mod push_configs;
mod reads;
mod store_layer;
mod tables;

use std::sync::Arc;
use std::time::Duration;

pub use crate::store::StoreError;
pub use delivery::{
    ClaimedDelivery, DeliveryStartError, DeliveryTasks, Endpoint, LedgerReads, NewDelivery, PushConfig,
    RetrySchedule,
};
pub use error::RuntimeError;
pub(crate) use execution::new_replica_id;
pub use execution::{ExecuteTool, LeaseSettings};
use fanout::LiveRuns;
pub use fanout::{MapEvents, RunEventStream, RunStream, WatchRuns};
pub use lifecycle::{CallAnswer, ResumeRun, StartRun};
pub use reads::{ListRuns, ListThreads, RunPage, ThreadPage, ThreadView, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};

use crate::agent::AgentRegistry;
use crate::config::ServerConfig;
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::store::Store;

/// Settings of the runtime.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// How long a suspended run waits for an answer before it expires.
    pub suspend_ttl: Duration,
    /// Deliveries (each the chunks of one stored write, or a replayed page)
    /// buffered per client stream before its follower waits for the client;
    /// the run itself never waits for a client.
    pub stream_buffer: usize,
    /// How often the expiry sweep looks for suspended runs past their time
    /// to live (see `Runtime::spawn_expiry_sweeper`); zero disables it.
    pub sweep_interval: Duration,
    /// How often the server checks that the store answers, for its health
    /// status; zero disables the check.
    pub health_check_interval: Duration,
    /// How this replica holds leases on the runs it executes and finds
    /// runs whose holder is gone.
    pub lease: LeaseSettings,
    /// This replica's id, the owner of its leases: unique among the
    /// replicas sharing a store (a fresh UUID by default).
    pub replica_id: String,
    /// Where the runtime counts what happens (see [`crate::metrics`]).
    pub metrics: Metrics,
    /// Hard limits on requests and runs (`[limits]`).
    pub limits: Limits,
    /// Threads idle for longer than this are deleted with their runs by
    /// the sweep (`[threads] retention`); `None` keeps them.
    pub thread_retention: Option<Duration>,
}

impl RuntimeConfig {
    /// The settings `server` gives (`[server]`: the time to live of a
    /// suspension, the sweep, leases, the replica id), and the defaults of
    /// the rest.
    pub fn of(server: &ServerConfig) -> Self {
        Self {
            suspend_ttl: server.suspend_ttl,
            stream_buffer: 256,
            sweep_interval: server.sweep_interval,
            health_check_interval: Duration::from_secs(5),
            lease: LeaseSettings::of(server),
            replica_id: server.replica_id.clone().unwrap_or_else(new_replica_id),
            metrics: Metrics::default(),
            limits: Limits::default(),
            thread_retention: None,
        }
    }
}

impl Default for RuntimeConfig {
    /// As a server without any setting runs.
    fn default() -> Self {
        Self::of(&ServerConfig::default())
    }
}

/// Starts, resumes and reads runs.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

/// What the parts of a runtime share; each mutable piece has one owner.
struct Inner {
    /// The agents runs start with (lifecycle) and continue with (execution).
    agents: AgentRegistry,
    /// The truth about every run, one handle per table (see `tables.rs`);
    /// runs are written by the lifecycle and the execution only.
    store: tables::Tables,
    config: RuntimeConfig,
    /// The runs that execute or are followed in this process: the
    /// fan-out's (see `fanout/live.rs`).
    live: LiveRuns,
    /// Stops every write once the server has shut down (see
    /// `store_layer.rs`, the layer `store` is behind).
    fence: store_layer::Fence,
    /// Runs executing here, per tenant (`limits.max_concurrent_runs_per_tenant`):
    /// a start or a Resume takes a slot before it commits, its execution
    /// gives it back when it ends.
    tenant_runs: Arc<crate::tenant_slots::TenantSlots>,
    /// The runs this process suspended lately, as stored: the execution
    /// keeps them, a Resume takes them (see `execution/recent.rs`).
    recent: Arc<execution::RecentSuspensions>,
}

impl Runtime {
    pub fn new(agents: AgentRegistry, store: Arc<dyn Store>, config: RuntimeConfig) -> Self {
        let live = LiveRuns::default();
        for (agent, _) in agents.iter() {
            config.metrics.configure_agent(&agent.id);
        }
        let (store, fence) = store_layer::Guard::wrap(store, config.metrics.clone());
        Self {
            inner: Arc::new(Inner {
                agents,
                store: tables::Tables::of(store),
                config,
                live,
                fence,
                tenant_runs: Arc::default(),
                recent: Arc::default(),
            }),
        }
    }
}
