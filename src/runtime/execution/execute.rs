//! Starting an execution of a run in this process: a start's or a Resume's,
//! whose first write (made by the execution, see `emitter.rs`) creates the
//! run or claims its suspension, or a takeover's, whose commit stored the
//! run already. The execution runs on a task of its own; its client is fed
//! from each of its writes.

use std::sync::Arc;

use tracing::Instrument;

use tokio::sync::oneshot;

use super::drive::Execution;
use super::emitter::{Begin, Opening};
use super::Emitter;
use crate::agent::Agent;
use crate::domain::{Continuation, Event, Grant, Lease, RunRecord, TraceContext};
use crate::propagation;
use crate::runtime::fanout::{ClientFeed, LiveRun};
use crate::runtime::{Inner, RunStream, Runtime};
use crate::store::StoreError;
use crate::tenant_slots::TenantSlot as RunSlot;

/// How long a claim waits for an execution of its run here to let go of it
/// before it is refused as a claim racing another.
const CLAIM_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// What the execution does first.
pub(in crate::runtime) enum Work {
    /// Model steps, from where the run stands.
    Steps,
    /// Take up these calls (approved ones run, answered ones go on), then
    /// suspend again while calls are pending, or step on; `grants`, made by
    /// the answers and not stored yet, cover the calls that wait from now
    /// on as the stored ones do.
    Continue {
        calls: Vec<Continuation>,
        grants: Vec<Grant>,
    },
}

/// The span an execution doing `work` runs in, made once with every field
/// its log lines carry: the run, its agent, tenant and thread, for a
/// continuation the call whose answer it follows (the run's latest), and
/// the trace it continues: `trace`, that of the request that gave this
/// replica the run (none for a takeover), linked to the trace that started
/// the run when that is another.
fn execution_span(run: &RunRecord, work: &Work, trace: Option<&TraceContext>) -> tracing::Span {
    let answered = match work {
        Work::Continue { .. } => run
            .state
            .answers
            .last()
            .map(|answer| answer.tool_call_id.as_str()),
        Work::Steps => None,
    };
    let linked = run
        .trace
        .as_ref()
        .filter(|started| trace.is_none_or(|trace| trace.trace_id() != started.trace_id()));
    // Absent fields (no thread, no call answered, no trace) are left out.
    let thread_id = run.thread.as_ref().map(|link| link.id.as_str());
    let span = tracing::info_span!(
        "run",
        run_id = %run.id,
        agent = %run.agent_id,
        tenant = %run.tenant,
        thread_id,
        tool_call_id = answered,
        trace_id = trace.map(|trace| tracing::field::display(trace.trace_id())),
        linked_trace_id = linked.map(|linked| tracing::field::display(linked.trace_id())),
    );
    propagation::adopt(&span, trace, linked);
    span
}

impl Inner {
    /// A lease on a run for this replica, from now.
    pub(in crate::runtime) fn new_lease(&self) -> Lease {
        self.config.lease.lease(&self.config.replica_id)
    }

    /// A slot for one more executing run of `tenant`, taken before a start
    /// or a Resume commits; past `limits.max_concurrent_runs_per_tenant`,
    /// TooManyRuns, which changes nothing.
    pub(in crate::runtime) fn run_slot(
        &self,
        tenant: &crate::domain::Tenant,
    ) -> Result<RunSlot, crate::runtime::RuntimeError> {
        let max = self.config.limits.max_concurrent_runs_per_tenant;
        self.tenant_runs
            .acquire(tenant, max)
            .ok_or_else(|| crate::runtime::RuntimeError::TooManyRuns {
                tenant: tenant.to_string(),
                max,
            })
    }
}

impl Runtime {
    /// Executes `run`, not written yet, here, as `begin` gave it to this
    /// replica, and returns the stream of this execution, from the first
    /// of `first` (the chunks that open it, numbered after the stored ones)
    /// to its next `finish`, once the execution's first write stored the
    /// run: the store's refusal of that write (a request id or a thread
    /// taken meanwhile, a claim that lost its race) is returned instead,
    /// before any chunk. `slot` is given back when the execution ends.
    /// `trace` is the trace context of the request that gave this replica
    /// the run: the execution continues its trace.
    ///
    /// A claim is refused at once if the run is executing here already
    /// (another Resume's claim of the same suspension, not written yet).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::runtime) async fn execute(
        &self,
        agent: Arc<Agent>,
        run: RunRecord,
        first: Vec<Event>,
        work: Work,
        slot: RunSlot,
        trace: Option<TraceContext>,
        begin: Begin,
    ) -> Result<RunStream, StoreError> {
        let after_seq = first.first().map_or(run.last_seq(), |event| event.seq - 1);
        let live = match begin {
            Begin::Start => self.inner.live.start_execution(run.id),
            Begin::Claim { .. } => self.reserve_claim(&run).await.ok_or(StoreError::Superseded)?,
        };
        let (stream, feed) = self.execution_stream(&live, after_seq, Vec::new());
        let (told, written) = oneshot::channel();
        let opening = Opening { begin, first, told };
        let span = execution_span(&run, &work, trace.as_ref());
        let execution = self.execution(live, agent, run, feed, Some(slot), Some(opening));
        spawn(execution, work, span, trace);
        match written.await {
            Ok(Ok(())) => Ok(stream),
            Ok(Err(refused)) => Err(refused),
            Err(_) => Err(StoreError::Backend(
                "the run's execution ended before it was stored".into(),
            )),
        }
    }

    /// Marks the suspended `run` executing here for a claim of it, unless
    /// another claim here has it. The execution that stored the suspension
    /// lets go of the run as soon as its commit returns, which a client
    /// that read the suspension from the store may beat by a moment: an
    /// execution still marked is waited for, briefly.
    async fn reserve_claim(&self, run: &RunRecord) -> Option<Arc<LiveRun>> {
        if let Some(live) = self.inner.live.try_start_execution(run.id) {
            return Some(live);
        }
        let live = self.inner.live.get(run.id)?;
        let _ = tokio::time::timeout(CLAIM_WAIT, live.idle()).await;
        self.inner.live.try_start_execution(run.id)
    }

    /// Executes `run`, stored with its opening chunks `first`, here with
    /// nobody streaming it (a takeover, or a deadline's continuation, which
    /// take no slot of the tenant's, and continue no request's trace);
    /// `live` is its entry, marked executing (see
    /// `LiveRuns::start_execution`).
    pub(in crate::runtime) fn execute_detached(
        &self,
        live: Arc<LiveRun>,
        agent: Arc<Agent>,
        run: RunRecord,
        first: Vec<Event>,
        work: Work,
    ) {
        live.release_stored(first);
        let span = execution_span(&run, &work, None);
        let execution = self.execution(live, agent, run, None, None, None);
        spawn(execution, work, span, None);
    }

    /// The execution of `run`, with its emitter (see [`Emitter::start`]).
    fn execution(
        &self,
        live: Arc<LiveRun>,
        agent: Arc<Agent>,
        run: RunRecord,
        feed: Option<ClientFeed>,
        slot: Option<RunSlot>,
        opening: Option<Opening>,
    ) -> Execution {
        let emitter = Emitter::start(
            Arc::clone(&self.inner.store.runs),
            Arc::clone(&self.inner.recent),
            live,
            &run,
            &self.inner.config,
            feed,
            slot,
            opening,
        );
        Execution::new(Arc::clone(&self.inner), agent, run, emitter)
    }
}

/// Spawns `execution` doing `work`, in `span` (see [`execution_span`]), on
/// behalf of a request that came with `trace` (see [`propagation::scope`]).
fn spawn(execution: Execution, work: Work, span: tracing::Span, trace: Option<TraceContext>) {
    match work {
        Work::Steps => tokio::spawn(propagation::scope(trace, execution.run_steps()).instrument(span)),
        Work::Continue { calls, grants } => tokio::spawn(
            propagation::scope(trace, execution.continue_after_resume(calls, grants)).instrument(span),
        ),
    };
}
