//! The SQLite store's run events (see `RunEventLog::read_run_events`): a row
//! per change of a run's status, written by the writer in the transaction
//! of the change; positions are the table's AUTOINCREMENT keys, so in the
//! order of the commits.

use rusqlite::{params, Connection};

use super::{backend, RunRow};
use crate::record::RunEventRow;
use crate::{corrupt, RunEventPage, StoreError};
use agentd_domain::{EventPosition, RunEvent, RunEventKind, Tenant};

/// Stores `kind`, an event of the write that leaves `run` as it is (see
/// `RunEventKind::of_write`): what a suspension waits on only with
/// `suspended`.
pub(super) fn insert(conn: &Connection, run: &RunRow, kind: RunEventKind) -> Result<(), StoreError> {
    let suspended = kind.lists_pending();
    let time = match kind {
        RunEventKind::Reminded => run.reminded_at.unwrap_or(run.updated_at),
        _ => run.updated_at,
    };
    conn.prepare_cached(
        "INSERT INTO run_events (tenant, run_id, agent_id, thread_id, kind, status, time, pending, \
         expires_at, decisions) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )
    .and_then(|mut insert| {
        insert.execute(params![
            run.tenant,
            run.id,
            run.agent_id,
            run.thread.as_ref().map(|thread| thread.id.as_str()),
            kind.as_str(),
            kind.status().as_str(),
            time,
            suspended.then_some(run.pending.as_deref()).flatten(),
            suspended.then_some(run.expires_at).flatten(),
            run.decisions.as_ref().filter(|_| kind.carries_decisions())
        ])
    })
    .map_err(backend)?;
    Ok(())
}

/// The columns a read selects, in this order.
pub(super) const COLUMNS: &str =
    "position, tenant, run_id, agent_id, thread_id, kind, status, time, pending, expires_at, decisions";

pub(super) fn read(
    conn: &Connection,
    tenant: Option<&Tenant>,
    after: EventPosition,
    limit: usize,
) -> Result<RunEventPage, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut events = Vec::new();
    let mut collect = |rows: &mut rusqlite::Rows<'_>| -> Result<(), StoreError> {
        while let Some(row) = rows.next().map_err(backend)? {
            events.push(event_from_row(row, 0)?);
        }
        Ok(())
    };
    match tenant {
        Some(tenant) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM run_events WHERE tenant = ?1 AND position > ?2 \
                 ORDER BY position LIMIT ?3"
            );
            let mut select = conn.prepare_cached(&sql).map_err(backend)?;
            collect(
                &mut select
                    .query(params![tenant.as_str(), after.minor, limit])
                    .map_err(backend)?,
            )?;
        }
        None => {
            let sql =
                format!("SELECT {COLUMNS} FROM run_events WHERE position > ?1 ORDER BY position LIMIT ?2");
            let mut select = conn.prepare_cached(&sql).map_err(backend)?;
            collect(&mut select.query(params![after.minor, limit]).map_err(backend)?)?;
        }
    }
    Ok(RunEventPage {
        events,
        settling: false,
    })
}

/// The last position given, even if its event went since with its run
/// (`sqlite_sequence` keeps AUTOINCREMENT's counter).
pub(super) fn head(conn: &Connection) -> Result<EventPosition, StoreError> {
    use rusqlite::OptionalExtension;
    let last: Option<i64> = conn
        .prepare_cached("SELECT seq FROM sqlite_sequence WHERE name = 'run_events'")
        .and_then(|mut select| select.query_row([], |row| row.get(0)).optional())
        .map_err(backend)?;
    Ok(EventPosition {
        major: 0,
        minor: last.unwrap_or(0),
    })
}

/// The event in the columns of a row that selected [`COLUMNS`] from
/// column `first` on.
pub(super) fn event_from_row(row: &rusqlite::Row<'_>, first: usize) -> Result<RunEvent, StoreError> {
    let column = |index: usize| first + index;
    let run_id: String = row.get(column(2)).map_err(backend)?;
    RunEventRow {
        position: EventPosition {
            major: 0,
            minor: row.get(column(0)).map_err(backend)?,
        },
        tenant: row.get(column(1)).map_err(backend)?,
        run_id: run_id.parse().map_err(corrupt)?,
        agent_id: row.get(column(3)).map_err(backend)?,
        thread_id: row.get(column(4)).map_err(backend)?,
        kind: row.get(column(5)).map_err(backend)?,
        status: row.get(column(6)).map_err(backend)?,
        time: row.get(column(7)).map_err(backend)?,
        pending: row.get(column(8)).map_err(backend)?,
        expires_at: row.get(column(9)).map_err(backend)?,
        decisions: row.get(column(10)).map_err(backend)?,
    }
    .into_event()
}
