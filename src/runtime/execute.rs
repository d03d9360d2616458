//! Starting an execution of a run in this process, after the commit that
//! gave this replica the run (a start, a Resume's claim, a takeover) stored
//! its first chunks and this replica's lease, or with that commit left to
//! the execution's first write (a new run; a Resume claimed in a store this
//! process alone writes). The execution runs on a task of its own; a client
//! follows it like any subscriber.

use std::sync::Arc;

use tracing::Instrument;

use super::drive::Execution;
use super::emitter::Standing;
use super::live::LiveRun;
use super::stream::ClientFeed;
use super::tenant_runs::RunSlot;
use super::{Emitter, Inner, RunStream, Runtime};
use crate::agent::Agent;
use crate::chunk::Event;
use crate::run::{Lease, RunRecord};
use crate::tools::ToolCall;

/// What the execution does first.
pub(super) enum Work {
    /// The `start` chunk of a new run that is not stored yet, then model
    /// steps.
    Start,
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
        Work::Start | Work::Steps => None,
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
    pub(super) fn new_lease(&self) -> Lease {
        self.config.lease.lease(&self.config.replica_id)
    }
}

impl Runtime {
    /// Executes a new run that is not stored yet and returns its stream,
    /// from its `start` chunk to its first `finish`. The execution's first
    /// write creates the run with its first chunks (usually the commit of
    /// its first step: one write where a create and a commit were two);
    /// nothing is streamed before that.
    /// `slot` is given back when the execution ends.
    pub(super) fn execute_new(&self, agent: Arc<Agent>, run: RunRecord, slot: RunSlot) -> RunStream {
        let live = self.inner.live.start_execution(run.id);
        let (stream, feed) = self.execution_stream(&live, 0, Vec::new());
        let work = (Work::Start, Standing::New);
        self.spawn_execution(live, agent, run, work, feed, Some(slot));
        stream
    }

    /// Executes `run` here and returns the stream of this execution, from
    /// the first of `first` to its next `finish`; `slot` is given back when
    /// the execution ends. `first` are the chunks the commit that gave this
    /// replica the run stored; or, with `claimed` (the run's live entry,
    /// claimed in this process by a Resume that is not stored yet), the
    /// chunks the answer produced, which the execution's first write
    /// stores with the claim (nothing is streamed before).
    pub(super) fn execute(
        &self,
        agent: Arc<Agent>,
        run: RunRecord,
        first: Vec<Event>,
        work: Work,
        slot: RunSlot,
        claimed: Option<Arc<LiveRun>>,
    ) -> RunStream {
        let after_seq = first.first().map_or(run.last_seq, |event| event.seq - 1);
        let (live, replay, standing) = match claimed {
            Some(live) => (live, Vec::new(), Standing::Claimed { first }),
            None => {
                let live = self.inner.live.start_execution(run.id);
                // Whoever waits on the run (a subscriber of a suspended run)
                // gets the first chunks too (copied only for them); this
                // stream starts with them.
                live.release_stored(first.as_slice());
                (live, first, Standing::Stored)
            }
        };
        let (stream, feed) = self.execution_stream(&live, after_seq, replay);
        self.spawn_execution(live, agent, run, (work, standing), feed, Some(slot));
        stream
    }

    /// Executes `run` here with nobody streaming it (a takeover, which
    /// takes no slot of its tenant).
    pub(super) fn execute_detached(&self, agent: Arc<Agent>, run: RunRecord, first: Vec<Event>, work: Work) {
        let live = self.inner.live.start_execution(run.id);
        live.release_stored(first);
        self.spawn_execution(live, agent, run, (work, Standing::Stored), None, None);
    }

    /// Spawns the execution, in its span (see [`execution_span`]).
    fn spawn_execution(
        &self,
        live: Arc<LiveRun>,
        agent: Arc<Agent>,
        run: RunRecord,
        (work, standing): (Work, Standing),
        feed: Option<ClientFeed>,
        slot: Option<RunSlot>,
    ) {
        let emitter = Emitter::start(
            Arc::clone(&self.inner.store),
            live,
            &run,
            standing,
            &self.inner.config,
            feed,
            slot,
        );
        let span = execution_span(&run, &work);
        let execution = Execution::new(Arc::clone(&self.inner), agent, run, emitter);
        match work {
            Work::Start => tokio::spawn(execution.start_run().instrument(span)),
            Work::Steps => tokio::spawn(execution.run_steps().instrument(span)),
            Work::Continue(approved) => {
                tokio::spawn(execution.continue_after_resume(approved).instrument(span))
            }
        };
    }
}
