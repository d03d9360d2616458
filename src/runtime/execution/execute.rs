//! Starting an execution of a run in this process, after the commit that
//! gave this replica the run (a start, a Resume's claim, a takeover) stored
//! its first chunks and this replica's lease. The execution runs on a task
//! of its own; its client is fed from each of its writes.

use std::sync::Arc;

use tracing::Instrument;

use super::drive::Execution;
use super::tenant_runs::RunSlot;
use super::Emitter;
use crate::agent::Agent;
use crate::domain::{Continuation, Event, Lease, RunRecord, TraceContext};
use crate::propagation;
use crate::runtime::fanout::{ClientFeed, LiveRun};
use crate::runtime::{Inner, RunStream, Runtime};

/// What the execution does first.
pub(in crate::runtime) enum Work {
    /// Model steps, from where the run stands.
    Steps,
    /// Take up these calls (approved ones run, answered ones go on), then
    /// suspend again while calls are pending, or step on.
    Continue(Vec<Continuation>),
}

/// The span an execution doing `work` runs in, made once with every field
/// its log lines carry: the run, its agent, tenant and thread, for a
/// continuation the call whose answer it follows (the run's latest), and
/// the trace it continues: `trace`, that of the request that gave this
/// replica the run (none for a takeover), linked to the trace that started
/// the run when that is another.
fn execution_span(run: &RunRecord, work: &Work, trace: Option<&TraceContext>) -> tracing::Span {
    let answered = match work {
        Work::Continue(_) => run
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
}

impl Runtime {
    /// Executes `run` here and returns the stream of this execution, from
    /// the first of `first` (the chunks the commit that gave this replica
    /// the run stored) to its next `finish`; `slot` is given back when the
    /// execution ends. `trace` is the trace context of the request that
    /// gave this replica the run: the execution continues its trace.
    pub(in crate::runtime) fn execute(
        &self,
        agent: Arc<Agent>,
        run: RunRecord,
        first: Vec<Event>,
        work: Work,
        slot: RunSlot,
        trace: Option<TraceContext>,
    ) -> RunStream {
        let after_seq = first.first().map_or(run.last_seq(), |event| event.seq - 1);
        let live = self.inner.live.start_execution(run.id);
        // Whoever waits on the run (a subscriber of a suspended run) gets
        // the first chunks too (copied only for them); this stream starts
        // with them.
        live.release_stored(first.as_slice());
        let (stream, feed) = self.execution_stream(&live, after_seq, first);
        let span = execution_span(&run, &work, trace.as_ref());
        let execution = self.execution(live, agent, run, feed, Some(slot));
        spawn(execution, work, span, trace);
        stream
    }

    /// Executes `run` here with nobody streaming it (a takeover, which
    /// takes no slot of its tenant, and continues no request's trace).
    pub(in crate::runtime) fn execute_detached(
        &self,
        agent: Arc<Agent>,
        run: RunRecord,
        first: Vec<Event>,
        work: Work,
    ) {
        let live = self.inner.live.start_execution(run.id);
        live.release_stored(first);
        let span = execution_span(&run, &work, None);
        let execution = self.execution(live, agent, run, None, None);
        spawn(execution, work, span, None);
    }

    /// The execution of `run`, with its emitter.
    fn execution(
        &self,
        live: Arc<LiveRun>,
        agent: Arc<Agent>,
        run: RunRecord,
        feed: Option<ClientFeed>,
        slot: Option<RunSlot>,
    ) -> Execution {
        let emitter = Emitter::start(
            Arc::clone(&self.inner.store),
            live,
            &run,
            &self.inner.config,
            feed,
            slot,
        );
        Execution::new(Arc::clone(&self.inner), agent, run, emitter)
    }
}

/// Spawns `execution` doing `work`, in `span` (see [`execution_span`]), on
/// behalf of a request that came with `trace` (see [`propagation::scope`]).
fn spawn(execution: Execution, work: Work, span: tracing::Span, trace: Option<TraceContext>) {
    match work {
        Work::Steps => tokio::spawn(propagation::scope(trace, execution.run_steps()).instrument(span)),
        Work::Continue(continuations) => tokio::spawn(
            propagation::scope(trace, execution.continue_after_resume(continuations)).instrument(span),
        ),
    };
}
