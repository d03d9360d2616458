//! A tenant's run events: one for every change of a run's status, stored
//! in the same write as the change, in an order every reader of the store
//! agrees on. `WatchRuns` replays and follows them; webhooks deliver them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{
    Decision, DecisionOutcome, DecisionSource, PendingCall, RunId, RunRecord, RunStatus, Tenant, ThreadId,
    Timestamp,
};

/// What changed in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEventKind {
    Started,
    Suspended,
    Resumed,
    Completed,
    Failed,
    Cancelled,
    Expired,
    /// A suspended run's reminder: it still waits (no change of status).
    Reminded,
}

impl RunEventKind {
    pub const ALL: [RunEventKind; 8] = [
        RunEventKind::Started,
        RunEventKind::Suspended,
        RunEventKind::Resumed,
        RunEventKind::Completed,
        RunEventKind::Failed,
        RunEventKind::Cancelled,
        RunEventKind::Expired,
        RunEventKind::Reminded,
    ];

    /// Whether events of this kind list the calls the run waits on.
    pub fn lists_pending(self) -> bool {
        matches!(self, RunEventKind::Suspended | RunEventKind::Reminded)
    }

    /// The lowercase name used in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            RunEventKind::Started => "started",
            RunEventKind::Suspended => "suspended",
            RunEventKind::Resumed => "resumed",
            RunEventKind::Completed => "completed",
            RunEventKind::Failed => "failed",
            RunEventKind::Cancelled => "cancelled",
            RunEventKind::Expired => "expired",
            RunEventKind::Reminded => "reminded",
        }
    }

    /// Parses [`RunEventKind::as_str`] back.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == s)
    }

    /// The run events of a write that leaves a run in `after`, in order:
    /// `opened`, how the write took the run if it did (a start's
    /// [`RunEventKind::Started`], a claim's [`RunEventKind::Resumed`]),
    /// then the status it leaves the run in, unless running. So a start
    /// stored at its suspension is `Started` then `Suspended`, and a claim
    /// stored with the finish it led to `Resumed` then `Completed`; a write
    /// that keeps a run running (a step's chunks, a renewed lease, a
    /// takeover) is no event.
    pub fn of_write(opened: Option<RunEventKind>, after: RunStatus) -> Vec<RunEventKind> {
        let entered = (after != RunStatus::Running).then(|| Self::entering(after));
        opened.into_iter().chain(entered).collect()
    }

    /// The status a run is in after this event.
    pub fn status(self) -> RunStatus {
        match self {
            RunEventKind::Started | RunEventKind::Resumed => RunStatus::Running,
            RunEventKind::Suspended | RunEventKind::Reminded => RunStatus::Suspended,
            RunEventKind::Completed => RunStatus::Completed,
            RunEventKind::Failed => RunStatus::Failed,
            RunEventKind::Cancelled => RunStatus::Cancelled,
            RunEventKind::Expired => RunStatus::Expired,
        }
    }

    /// Whether events of this kind carry the decisions that made them: an
    /// answer resumes a run, a CancelRun or the deadline closes one.
    pub fn carries_decisions(self) -> bool {
        matches!(
            self,
            RunEventKind::Resumed | RunEventKind::Cancelled | RunEventKind::Expired
        )
    }

    /// Of `decisions` (those of a write's changes, see
    /// `RunState::change_decisions`), the ones an event of this kind was
    /// made of: a resume's answers, a cancel's, the deadline's.
    pub fn decisions(self, decisions: &[Decision]) -> Vec<Decision> {
        let made_of = |decision: &Decision| match self {
            // An answer's: not a rule's or a grant's, made in a step since.
            RunEventKind::Resumed => {
                matches!(
                    decision.outcome,
                    DecisionOutcome::Answered | DecisionOutcome::Approved | DecisionOutcome::Declined
                ) && !matches!(decision.source, DecisionSource::Rule | DecisionSource::Grant)
            }
            RunEventKind::Cancelled => decision.outcome == DecisionOutcome::Cancelled,
            RunEventKind::Expired => decision.outcome == DecisionOutcome::Expired,
            _ => false,
        };
        decisions
            .iter()
            .filter(|decision| made_of(decision))
            .cloned()
            .collect()
    }

    /// The event of a write that moves a stored run into `status` from
    /// another status.
    pub fn entering(status: RunStatus) -> Self {
        match status {
            RunStatus::Running => RunEventKind::Resumed,
            RunStatus::Suspended => RunEventKind::Suspended,
            RunStatus::Completed => RunEventKind::Completed,
            RunStatus::Failed => RunEventKind::Failed,
            RunStatus::Cancelled => RunEventKind::Cancelled,
            RunStatus::Expired => RunEventKind::Expired,
        }
    }
}

impl fmt::Display for RunEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an event stands in its store: events are read in the order of
/// their positions, which rise strictly. A backend gives both parts their
/// meaning (an embedded store a counter in `minor`, PostgreSQL the writing
/// transaction's id in `major`); nothing else looks inside.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventPosition {
    pub major: i64,
    pub minor: i64,
}

/// One change of a run's status, as the store keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunEvent {
    pub position: EventPosition,
    pub time: Timestamp,
    pub kind: RunEventKind,
    pub tenant: Tenant,
    pub run_id: RunId,
    pub agent_id: String,
    pub thread_id: Option<ThreadId>,
    pub status: RunStatus,
    /// The calls the run waits on, and until when: set on
    /// [`RunEventKind::Suspended`] and [`RunEventKind::Reminded`] only.
    pub pending: Vec<PendingCall>,
    pub expires_at: Option<Timestamp>,
    /// The decisions the change was made of: set on
    /// [`RunEventKind::Resumed`], [`RunEventKind::Cancelled`] and
    /// [`RunEventKind::Expired`] (see [`RunEventKind::carries_decisions`]).
    pub decisions: Vec<Decision>,
}

impl RunEvent {
    /// The `kind` event of a write that leaves `run` as it is (the status
    /// the event names may be one the write passed through: see
    /// [`RunEventKind::of_write`]); the store assigns its position.
    pub fn of(run: &RunRecord, kind: RunEventKind) -> Self {
        let (pending, expires_at) = match kind {
            _ if kind.lists_pending() => (run.pending().to_vec(), run.expires_at()),
            _ => (Vec::new(), None),
        };
        let time = match kind {
            RunEventKind::Reminded => run.reminded_at().unwrap_or(run.updated_at),
            _ => run.updated_at,
        };
        let decisions = kind.decisions(run.state.change_decisions());
        Self {
            position: EventPosition::default(),
            time,
            kind,
            tenant: run.tenant.clone(),
            run_id: run.id,
            agent_id: run.agent_id.clone(),
            thread_id: run.thread.as_ref().map(|link| link.id.clone()),
            status: kind.status(),
            pending,
            expires_at,
            decisions,
        }
    }

    /// The cursor that names this event to watchers.
    pub fn cursor(&self) -> EventCursor {
        EventCursor {
            position: self.position,
            time: self.time,
        }
    }
}

/// What a watcher holds to continue after an event: its position and time
/// (the time tells a cursor older than what the store keeps without a
/// read). Opaque to clients: [`EventCursor::encode`] and
/// [`EventCursor::decode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventCursor {
    pub position: EventPosition,
    pub time: Timestamp,
}

/// A cursor string that no server made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed cursor {0:?}: pass a cursor from a RunEvent, or none to watch from now on")]
pub struct MalformedCursor(pub String);

/// The version tag that starts every cursor string.
const CURSOR_TAG: &str = "e1";

impl EventCursor {
    /// The cursor as clients see it: a tag and three numbers in hex.
    pub fn encode(&self) -> String {
        format!(
            "{CURSOR_TAG}.{:x}.{:x}.{:x}",
            self.position.major, self.position.minor, self.time.0
        )
    }

    pub fn decode(text: &str) -> Result<Self, MalformedCursor> {
        let malformed = || MalformedCursor(text.to_owned());
        let mut parts = text.split('.');
        if parts.next() != Some(CURSOR_TAG) {
            return Err(malformed());
        }
        let mut number = || {
            let part = parts.next().ok_or_else(malformed)?;
            // Only what `encode` writes: lowercase hex, no sign, no padding.
            let canonical = !part.is_empty()
                && part.len() <= 16
                && part
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && (part == "0" || !part.starts_with('0'));
            if !canonical {
                return Err(malformed());
            }
            u64::from_str_radix(part, 16)
                .ok()
                .and_then(|n| i64::try_from(n).ok())
                .ok_or_else(malformed)
        };
        let (major, minor, time) = (number()?, number()?, number()?);
        if parts.next().is_some() {
            return Err(malformed());
        }
        Ok(Self {
            position: EventPosition { major, minor },
            time: Timestamp(time),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_the_events_of_how_it_took_the_run_then_of_where_it_left_it() {
        use RunEventKind as Kind;
        use RunStatus::*;
        assert_eq!(Kind::of_write(Some(Kind::Started), Running), [Kind::Started]);
        assert_eq!(
            Kind::of_write(Some(Kind::Started), Suspended),
            [Kind::Started, Kind::Suspended]
        );
        assert_eq!(Kind::of_write(Some(Kind::Resumed), Running), [Kind::Resumed]);
        assert_eq!(
            Kind::of_write(Some(Kind::Resumed), Completed),
            [Kind::Resumed, Kind::Completed]
        );
        assert_eq!(
            Kind::of_write(Some(Kind::Resumed), Suspended),
            [Kind::Resumed, Kind::Suspended]
        );
        assert_eq!(Kind::of_write(None, Cancelled), [Kind::Cancelled]);
        assert_eq!(Kind::of_write(None, Running), []);
        for kind in RunEventKind::ALL {
            let entered = !matches!(kind, Kind::Started | Kind::Reminded);
            assert_eq!(Kind::entering(kind.status()) == kind, entered);
        }
    }

    #[test]
    fn cursors_read_back_and_nothing_else_does() {
        let cursor = EventCursor {
            position: EventPosition {
                major: 77,
                minor: 123_456,
            },
            time: Timestamp(1_764_000_000_000_000),
        };
        assert_eq!(EventCursor::decode(&cursor.encode()), Ok(cursor));
        let zero = EventCursor {
            position: EventPosition::default(),
            time: Timestamp(0),
        };
        assert_eq!(EventCursor::decode(&zero.encode()), Ok(zero));
        for bad in [
            "",
            "e1",
            "e1.1.2",
            "e1.1.2.3.4",
            "e2.1.2.3",
            "e1.01.2.3",
            "e1.-1.2.3",
            "e1.A.2.3",
            "e1.ffffffffffffffff.2.3",
            "e1..2.3",
            "garbage",
        ] {
            assert!(EventCursor::decode(bad).is_err(), "{bad:?}");
        }
    }
}
