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
use crate::domain::{Event, Lease, RunRecord, ToolCall};
use crate::runtime::fanout::{ClientFeed, LiveRun};
use crate::runtime::{Inner, RunStream, Runtime};

/// What the execution does first.
pub(in crate::runtime) enum Work {
    /// Model steps, from where the run stands.
    Steps,
    /// Run these approved calls, then suspend again while calls are
    /// pending, or step on.
    Continue(Vec<ToolCall>),
}

/// The span an execution doing `work` runs in, made once with every field
/// its log lines carry: the run, its agent, tenant and thread, and for a
/// continuation the call whose answer it follows (the run's latest).
fn execution_span(run: &RunRecord, work: &Work) -> tracing::Span {
    let answered = match work {
        Work::Continue(_) => run
            .state
            .answers
            .last()
            .map(|answer| answer.tool_call_id.as_str()),
        Work::Steps => None,
    };
    // Absent fields (no thread, no call answered) are left out.
    let thread_id = run.thread.as_ref().map(|link| link.id.as_str());
    tracing::info_span!(
        "run",
        run_id = %run.id,
        agent = %run.agent_id,
        tenant = %run.tenant,
        thread_id,
        tool_call_id = answered
    )
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
    /// execution ends.
    pub(in crate::runtime) fn execute(
        &self,
        agent: Arc<Agent>,
        run: RunRecord,
        first: Vec<Event>,
        work: Work,
        slot: RunSlot,
    ) -> RunStream {
        let after_seq = first.first().map_or(run.last_seq, |event| event.seq - 1);
        let live = self.inner.live.start_execution(run.id);
        // Whoever waits on the run (a subscriber of a suspended run) gets
        // the first chunks too (copied only for them); this stream starts
        // with them.
        live.release_stored(first.as_slice());
        let (stream, feed) = self.execution_stream(&live, after_seq, first);
        self.spawn_execution(live, agent, run, work, feed, Some(slot));
        stream
    }

    /// Executes `run` here with nobody streaming it (a takeover, which
    /// takes no slot of its tenant).
    pub(in crate::runtime) fn execute_detached(
        &self,
        agent: Arc<Agent>,
        run: RunRecord,
        first: Vec<Event>,
        work: Work,
    ) {
        let live = self.inner.live.start_execution(run.id);
        live.release_stored(first);
        self.spawn_execution(live, agent, run, work, None, None);
    }

    /// Spawns the execution, in its span (see [`execution_span`]).
    fn spawn_execution(
        &self,
        live: Arc<LiveRun>,
        agent: Arc<Agent>,
        run: RunRecord,
        work: Work,
        feed: Option<ClientFeed>,
        slot: Option<RunSlot>,
    ) {
        let emitter = Emitter::start(
            Arc::clone(&self.inner.store),
            live,
            &run,
            &self.inner.config,
            feed,
            slot,
        );
        let span = execution_span(&run, &work);
        let execution = Execution::new(Arc::clone(&self.inner), agent, run, emitter);
        match work {
            Work::Steps => tokio::spawn(execution.run_steps().instrument(span)),
            Work::Continue(approved) => {
                tokio::spawn(execution.continue_after_resume(approved).instrument(span))
            }
        };
    }
}
