//! Run events and WatchRuns requests <-> their proto messages.

use crate::domain::{EventCursor, RunEvent, RunEventKind};
use crate::pb;
use crate::runtime::{RuntimeError, WatchRuns};

use super::invalid;
use super::run::{pending_to_proto, status_to_proto};
use super::value::timestamp;

pub(super) fn kind_to_proto(kind: RunEventKind) -> pb::RunEventKind {
    match kind {
        RunEventKind::Started => pb::RunEventKind::Started,
        RunEventKind::Suspended => pb::RunEventKind::Suspended,
        RunEventKind::Resumed => pb::RunEventKind::Resumed,
        RunEventKind::Completed => pb::RunEventKind::Completed,
        RunEventKind::Failed => pb::RunEventKind::Failed,
        RunEventKind::Cancelled => pb::RunEventKind::Cancelled,
        RunEventKind::Expired => pb::RunEventKind::Expired,
        RunEventKind::Reminded => pb::RunEventKind::Reminded,
    }
}

fn kind_from_proto(kind: i32) -> Option<RunEventKind> {
    RunEventKind::ALL
        .into_iter()
        .find(|candidate| kind_to_proto(*candidate) as i32 == kind)
}

pub(crate) fn run_event_to_proto(event: &RunEvent) -> pb::RunEvent {
    pb::RunEvent {
        cursor: event.cursor().encode(),
        time: Some(timestamp(event.time)),
        kind: kind_to_proto(event.kind) as i32,
        run_id: event.run_id.to_string(),
        agent_id: event.agent_id.clone(),
        thread_id: event
            .thread_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        status: status_to_proto(event.status) as i32,
        pending: event
            .pending
            .iter()
            .map(|pending| pending_to_proto(pending, event.expires_at))
            .collect(),
        decisions: super::decision::decisions_to_proto(&event.decisions),
    }
}

pub(crate) fn watch_runs_request(request: pb::WatchRunsRequest) -> Result<WatchRuns, RuntimeError> {
    let pb::WatchRunsRequest {
        after_cursor,
        kinds,
        agent_id,
    } = request;
    let after = match after_cursor.as_str() {
        "" => None,
        cursor => Some(EventCursor::decode(cursor)?),
    };
    let kinds = kinds
        .into_iter()
        .map(|kind| {
            kind_from_proto(kind).ok_or_else(|| {
                invalid(
                    "kinds",
                    format!("{kind} is not a run event kind (RUN_EVENT_KIND_STARTED = 1 ... REMINDED = 8)"),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(WatchRuns {
        after,
        kinds,
        agent_id: (!agent_id.is_empty()).then_some(agent_id),
    })
}
