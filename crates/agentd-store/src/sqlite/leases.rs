//! The SQLite store's lease side: appends to a running run (events, the
//! version, `last_seq` and the lease's expiry, without rewriting the state),
//! the recovery query for running runs whose lease has expired, and reading
//! a record with the columns that appends move laid over its stored JSON.

use rusqlite::{params, Connection};

use super::apply::{guard_sql, Guard};
use super::{backend, to_i64};
use crate::corrupt;
use crate::StoreError;
use agentd_domain::{RunId, RunRecord, Timestamp};

pub(super) use crate::record::RECORD_COLUMNS;

/// A record from a row selected with [`RECORD_COLUMNS`] first.
pub(super) fn record_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<RunRecord, StoreError>> {
    let record: Vec<u8> = row.get(0)?;
    let version: i64 = row.get(1)?;
    let last_seq: i64 = row.get(2)?;
    let lease_expires_at: Option<i64> = row.get(3)?;
    Ok(crate::record::overlay(
        &record,
        version,
        last_seq,
        lease_expires_at,
    ))
}

/// An append's update of its run, under its [`Guard`].
pub(super) const APPEND_SQL: &str = concat!(
    "UPDATE runs SET version = version + 1, last_seq = coalesce(?4, last_seq), \
     lease_expires_at = coalesce(?5, lease_expires_at) WHERE ",
    guard_sql!()
);

/// Moves the version, `last_seq` and lease expiry of a run that `guard`
/// lets through; the caller inserts the events in the same transaction.
pub(super) fn append(
    conn: &Connection,
    guard: &Guard<'_>,
    last_seq: Option<i64>,
    lease_expires_at: Option<i64>,
) -> Result<(), StoreError> {
    let updated = conn
        .prepare_cached(APPEND_SQL)
        .and_then(|mut update| {
            update.execute(params![
                guard.id,
                guard.expected_version,
                guard.first_seq,
                last_seq,
                lease_expires_at
            ])
        })
        .map_err(backend)?;
    if updated == 1 {
        return Ok(());
    }
    Err(guard.refused_update(conn))
}

/// The status is spelled out, not bound, so that SQLite can use the partial
/// index of running runs (see migration 0007).
pub(super) const EXPIRED_SQL: &str = "SELECT id FROM runs WHERE status = 'running' \
     AND (lease_expires_at IS NULL OR lease_expires_at <= ?1) \
     ORDER BY lease_expires_at LIMIT ?2";

pub(super) fn expired_leases(
    conn: &Connection,
    now: Timestamp,
    limit: usize,
) -> Result<Vec<RunId>, StoreError> {
    let mut select = conn.prepare_cached(EXPIRED_SQL).map_err(backend)?;
    let rows = select
        .query_map(params![now.0, to_i64(limit as u64)], |row| {
            row.get::<_, String>(0)
        })
        .map_err(backend)?;
    rows.map(|id| {
        let id = id.map_err(backend)?;
        id.parse::<RunId>()
            .map_err(|e| corrupt(format!("run id {id:?}: {e}")))
    })
    .collect()
}
