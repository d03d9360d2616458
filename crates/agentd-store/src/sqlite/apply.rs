//! What applying one write of the writer's batch comes to ([`Applied`],
//! with the write's [`Reply`]), and what an update of an existing run is
//! guarded by ([`Guard`]). Shared by the writer and the modules whose
//! writes it applies; it calls none of them.

use rusqlite::{Connection, OptionalExtension};

use super::backend;
use crate::record::stored_already;
use crate::{DeliveryClaim, StoreError};
use agentd_domain::EventPosition;

/// What applying one write of a batch came to. A write is refused by its
/// first statement or not at all (the id, the version, the seqs of its
/// events), so that it needs no savepoint of its own: a refused write left
/// no trace, and an applied one cannot fail halfway for any reason but the
/// engine failing.
pub(in crate::sqlite) enum Applied {
    /// Applied, with a run event or without, and what the write answers.
    Whole { run_event: bool, reply: Reply },
    /// Refused before any change.
    Refused(StoreError),
    /// Failed after changing part of the transaction.
    Broken(StoreError),
}

/// What a write answers: nothing for the writes of runs.
pub(in crate::sqlite) enum Reply {
    Done,
    Cursor(EventPosition),
    /// Whether a compare-and-set write changed anything.
    Changed(bool),
    Claimed(DeliveryClaim),
}

impl Reply {
    fn unexpected(&self) -> StoreError {
        StoreError::Backend("the writer answered a ledger write with another write's reply".into())
    }

    pub(in crate::sqlite) fn cursor(self) -> Result<EventPosition, StoreError> {
        match self {
            Reply::Cursor(position) => Ok(position),
            other => Err(other.unexpected()),
        }
    }

    pub(in crate::sqlite) fn changed(self) -> Result<bool, StoreError> {
        match self {
            Reply::Changed(changed) => Ok(changed),
            other => Err(other.unexpected()),
        }
    }

    pub(in crate::sqlite) fn claim(self) -> Result<DeliveryClaim, StoreError> {
        match self {
            Reply::Claimed(claim) => Ok(claim),
            other => Err(other.unexpected()),
        }
    }
}

/// What an update of an existing run is guarded by, in its `WHERE`
/// (`guard_sql!`): the run is at the version the write was made from, and
/// the write's events, if any, start after its last stored seq. An update
/// that changes no row has changed nothing, and [`Guard::refusal`] says why.
pub(in crate::sqlite) struct Guard<'a> {
    pub(in crate::sqlite) id: &'a str,
    pub(in crate::sqlite) expected_version: i64,
    pub(in crate::sqlite) first_seq: Option<i64>,
}

/// [`Guard`]'s condition, with its values bound as `?1` – `?3` (a macro,
/// so that statements embed it as literals).
macro_rules! guard_sql {
    () => {
        "id = ?1 AND version = ?2 AND (?3 IS NULL OR last_seq < ?3)"
    };
}
pub(in crate::sqlite) use guard_sql;

impl Guard<'_> {
    /// Why a write under this guard is refused: there is no such run, its
    /// version is another, it has the write's first seq already, or else
    /// `otherwise`. Only read once the write is known to be refused.
    pub(in crate::sqlite) fn refusal(
        &self,
        conn: &Connection,
        otherwise: impl FnOnce() -> StoreError,
    ) -> StoreError {
        let stored: Option<(i64, i64)> = match conn
            .prepare_cached("SELECT version, last_seq FROM runs WHERE id = ?1")
            .and_then(|mut select| {
                select
                    .query_row([self.id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            }) {
            Ok(stored) => stored,
            Err(error) => return backend(error),
        };
        match (stored, self.first_seq) {
            (None, _) => StoreError::NotFound,
            (Some((actual, _)), _) if actual != self.expected_version => StoreError::VersionConflict {
                expected: self.expected_version as u64,
                actual: actual as u64,
            },
            (Some((_, stored)), Some(first)) if first <= stored => stored_already(first, stored),
            (Some(_), _) => otherwise(),
        }
    }

    /// [`Guard::refusal`] of a guarded update that changed no row.
    pub(in crate::sqlite) fn refused_update(&self, conn: &Connection) -> StoreError {
        self.refusal(conn, || {
            StoreError::Backend(format!("run {} changed no row", self.id))
        })
    }
}
