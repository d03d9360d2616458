//! The runtime's API: every operation a surface (gRPC, gRPC-Web, A2A, the
//! inbox, webhooks) calls, on one screen. Each surface converts its
//! protocol's requests into these calls, and their results and errors
//! back; none reaches past them. A call is made on behalf of a tenant,
//! which sees only its own runs and threads: another tenant's is not found.
//! What the server hosting a runtime does with it (its chores, its health)
//! is in `host.rs`.

use crate::agent::AgentRegistry;
use crate::domain::{Decider, Grant, RunId, RunRecord, Tenant, ThreadId, ToolOutput};
use crate::limits::Limits;
use crate::metrics::Metrics;

use super::{
    ExecuteTool, ListRuns, ListThreads, PushConfig, ResumeRun, RunEventStream, RunPage, RunStream, Runtime,
    RuntimeError, StartRun, ThreadPage, ThreadView, WatchRuns,
};

impl Runtime {
    // Runs: `lifecycle/` changes them, `reads/` reads them, `fanout/`
    // streams them.

    /// Starts a run (or, on a thread with `auto_resume`, answers its latest
    /// run's question) and streams it until it suspends or finishes. A
    /// retried `request_id` streams the run it started instead.
    pub async fn start(&self, tenant: &Tenant, request: StartRun) -> Result<RunStream, RuntimeError> {
        self.start_run(tenant, request).await
    }

    /// Answers a suspended call, checked against its question, and streams
    /// the continuation. A retried `request_id` replays it instead.
    /// `request.decider` is who answers, through which surface: each
    /// answer is recorded as its call's decision.
    pub async fn resume(&self, tenant: &Tenant, request: ResumeRun) -> Result<RunStream, RuntimeError> {
        self.resume_loaded(tenant, request, None).await
    }

    /// Stops a running or suspended run; returns it as stored. `decider`
    /// (who cancels, through which surface) is recorded as the decision of
    /// each call that was waiting.
    pub async fn cancel(
        &self,
        tenant: &Tenant,
        id: RunId,
        reason: String,
        decider: &Decider,
    ) -> Result<RunRecord, RuntimeError> {
        self.cancel_run(tenant, id, reason, decider).await
    }

    /// A run (a suspended one past its time to live reads as expired).
    pub async fn get_run(&self, tenant: &Tenant, id: RunId) -> Result<RunRecord, RuntimeError> {
        self.read_run(tenant, id).await
    }

    /// One page of runs, newest first.
    pub async fn list_runs(&self, tenant: &Tenant, request: ListRuns) -> Result<RunPage, RuntimeError> {
        self.list_run_page(tenant, request).await
    }

    /// How many runs pass `request`'s filters, on every page.
    pub async fn count_runs(&self, tenant: &Tenant, request: &ListRuns) -> Result<u64, RuntimeError> {
        self.count_matching_runs(tenant, request).await
    }

    /// A run's chunks after `after_seq`, replayed, then live to its next
    /// `finish` (or, for a suspended run, through its continuation).
    pub async fn subscribe(
        &self,
        tenant: &Tenant,
        id: RunId,
        after_seq: u64,
    ) -> Result<RunStream, RuntimeError> {
        self.subscribe_run(tenant, id, after_seq).await
    }

    /// The run events `watch` wants, after its cursor, then as they happen.
    pub async fn watch_runs(
        &self,
        tenant: &Tenant,
        watch: WatchRuns,
    ) -> Result<RunEventStream, RuntimeError> {
        self.watch_run_events(tenant, watch).await
    }

    /// The grants in force in `tenant`'s run `run` (scope `Run`; its
    /// thread's are in [`Runtime::get_thread`]'s view).
    pub async fn run_grants(&self, tenant: &Tenant, run: &RunRecord) -> Result<Vec<Grant>, RuntimeError> {
        self.grants_in_force(tenant, Some(run), None).await
    }

    /// Ends `tenant`'s grant `id` (another tenant's is not found): calls
    /// that start waiting from now on are asked about again.
    pub async fn revoke_grant(&self, tenant: &Tenant, id: &str) -> Result<(), RuntimeError> {
        self.revoke(tenant, id).await
    }

    // Threads: conversations across runs.

    /// A thread with its runs, in thread order.
    pub async fn get_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadView, RuntimeError> {
        self.read_thread(tenant, id).await
    }

    /// One page of threads.
    pub async fn list_threads(
        &self,
        tenant: &Tenant,
        request: ListThreads,
    ) -> Result<ThreadPage, RuntimeError> {
        self.list_thread_page(tenant, request).await
    }

    /// Deletes a thread with its runs; returns their ids, oldest first.
    pub async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunId>, RuntimeError> {
        self.inner.delete_thread(tenant, id).await
    }

    // Agents and tools.

    /// The agents served, with their tools.
    pub fn agents(&self) -> &AgentRegistry {
        &self.inner.agents
    }

    /// Runs one tool of an agent outside any run (ask_user answers with its
    /// fallback text).
    pub async fn execute_tool(
        &self,
        tenant: &Tenant,
        request: ExecuteTool,
    ) -> Result<ToolOutput, RuntimeError> {
        self.execute_tool_alone(tenant, request).await
    }

    // A2A push notification configurations of a run (`push_configs.rs`).

    /// Stores `config` (of `config.tenant`'s run), replacing the run's
    /// configuration of the same id.
    pub async fn put_push_config(&self, config: &PushConfig) -> Result<(), RuntimeError> {
        self.store_push_config(config).await
    }

    /// Run `id`'s push configurations, by id.
    pub async fn push_configs(&self, tenant: &Tenant, id: RunId) -> Result<Vec<PushConfig>, RuntimeError> {
        self.read_push_configs(tenant, id).await
    }

    /// Deletes run `id`'s configuration `config_id`: whether there was one.
    pub async fn delete_push_config(
        &self,
        tenant: &Tenant,
        id: RunId,
        config_id: &str,
    ) -> Result<bool, RuntimeError> {
        self.remove_push_config(tenant, id, config_id).await
    }

    // What every surface holds requests and streams to.

    /// The limits requests and runs are held to.
    pub fn limits(&self) -> &Limits {
        &self.inner.config.limits
    }

    /// What this runtime counts and times (surfaces time their streams).
    pub fn metrics(&self) -> &Metrics {
        &self.inner.config.metrics
    }
}
