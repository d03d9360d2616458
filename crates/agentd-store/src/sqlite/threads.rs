//! The SQLite store's threads: the compare-and-set that makes a new run its
//! thread's latest (inside the run's create write), the thread reads, and
//! the deletion of a thread with its runs and their events (one write).

use std::str::FromStr;

use rusqlite::{params, Connection, OptionalExtension};

use super::{backend, to_i64, RunRow};
use crate::corrupt;
use crate::threads::THREAD_CASCADE;
use crate::{record, StoreError};
use agentd_domain::{RunId, RunRecord, Tenant, ThreadId, ThreadLink, ThreadQuery, ThreadRecord, Timestamp};

/// A run's thread link, as the writer needs it.
pub(super) struct ThreadLinkRow {
    pub(super) id: String,
    previous: Option<String>,
}

impl ThreadLinkRow {
    pub(super) fn new(link: &ThreadLink) -> Self {
        Self {
            id: link.id.to_string(),
            previous: link.previous.map(|id| id.to_string()),
        }
    }
}

/// Refuses (`ThreadMoved`) a new run of `thread` unless the thread's
/// latest run is still the one the new run follows (no thread at all for
/// its first run), so that [`advance`] cannot be refused after it.
pub(super) fn check_advance(
    conn: &Connection,
    run: &RunRow,
    thread: &ThreadLinkRow,
) -> Result<(), StoreError> {
    let latest: Option<String> = conn
        .prepare_cached("SELECT latest_run FROM threads WHERE tenant = ?1 AND thread_id = ?2")
        .and_then(|mut select| {
            select
                .query_row(params![run.tenant, thread.id], |row| row.get(0))
                .optional()
        })
        .map_err(backend)?;
    if latest != thread.previous {
        return Err(StoreError::ThreadMoved);
    }
    Ok(())
}

/// Makes `run` its thread's latest run: creates the thread if the run
/// follows none, or moves the thread from the run it follows. `ThreadMoved`
/// when the thread is not as the run expects.
pub(super) fn advance(conn: &Connection, run: &RunRow, thread: &ThreadLinkRow) -> Result<(), StoreError> {
    let changed = match &thread.previous {
        None => conn
            .prepare_cached(
                "INSERT INTO threads (tenant, thread_id, created_at, updated_at, latest_run) \
                 VALUES (?1, ?2, ?3, ?3, ?4) ON CONFLICT DO NOTHING",
            )
            .and_then(|mut insert| insert.execute(params![run.tenant, thread.id, run.created_at, run.id])),
        Some(previous) => conn
            .prepare_cached(
                "UPDATE threads SET latest_run = ?3, updated_at = ?4 \
                 WHERE tenant = ?1 AND thread_id = ?2 AND latest_run = ?5",
            )
            .and_then(|mut update| {
                update.execute(params![run.tenant, thread.id, run.id, run.created_at, previous])
            }),
    }
    .map_err(backend)?;
    if changed == 0 {
        return Err(StoreError::ThreadMoved);
    }
    Ok(())
}

/// Deletes a thread, its runs and their events; `NotFound` without it.
pub(super) fn delete(conn: &Connection, tenant: &str, thread_id: &str) -> Result<(), StoreError> {
    let deleted = conn
        .prepare_cached("DELETE FROM threads WHERE tenant = ?1 AND thread_id = ?2")
        .and_then(|mut delete| delete.execute([tenant, thread_id]))
        .map_err(backend)?;
    if deleted == 0 {
        return Err(StoreError::NotFound);
    }
    for table in THREAD_CASCADE {
        conn.prepare_cached(&format!(
            "DELETE FROM {table} WHERE run_id IN \
             (SELECT id FROM runs WHERE tenant = ?1 AND thread_id = ?2)"
        ))
        .and_then(|mut delete| delete.execute([tenant, thread_id]))
        .map_err(backend)?;
    }
    conn.prepare_cached("DELETE FROM runs WHERE tenant = ?1 AND thread_id = ?2")
        .and_then(|mut delete| delete.execute([tenant, thread_id]))
        .map_err(backend)?;
    Ok(())
}

/// The columns a thread read selects, in this order.
const THREAD_COLUMNS: &str = "t.tenant, t.thread_id, t.created_at, t.updated_at, t.latest_run, \
                              r.status, r.updated_at";

fn thread_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<ThreadRecord, StoreError>> {
    let tenant: String = row.get(0)?;
    let id: String = row.get(1)?;
    let latest_run: String = row.get(4)?;
    let status: Option<String> = row.get(5)?;
    let latest_updated_at: Option<i64> = row.get(6)?;
    let latest = status.as_deref().zip(latest_updated_at);
    let (created_at, updated_at) = (row.get(2)?, row.get(3)?);
    Ok(RunId::from_str(&latest_run)
        .map_err(corrupt)
        .and_then(|latest_run| record::thread((&tenant, &id), created_at, updated_at, latest_run, latest)))
}

pub(super) fn load_thread(
    conn: &Connection,
    tenant: &Tenant,
    id: &ThreadId,
) -> Result<ThreadRecord, StoreError> {
    let sql = format!(
        "SELECT {THREAD_COLUMNS} FROM threads t LEFT JOIN runs r ON r.id = t.latest_run \
         WHERE t.tenant = ?1 AND t.thread_id = ?2"
    );
    let thread = conn
        .prepare_cached(&sql)
        .and_then(|mut select| {
            select
                .query_row([tenant.as_str(), id.as_str()], thread_from_row)
                .optional()
        })
        .map_err(backend)?;
    thread.ok_or(StoreError::NotFound)?
}

fn thread_runs_sql() -> String {
    format!(
        "SELECT {} FROM runs WHERE tenant = ?1 AND thread_id = ?2 ORDER BY id",
        super::leases::RECORD_COLUMNS
    )
}

pub(super) fn thread_runs(
    conn: &Connection,
    tenant: &Tenant,
    id: &ThreadId,
) -> Result<Vec<RunRecord>, StoreError> {
    let mut select = conn.prepare_cached(&thread_runs_sql()).map_err(backend)?;
    let rows = select
        .query_map([tenant.as_str(), id.as_str()], super::leases::record_from_row)
        .map_err(backend)?;
    rows.map(|record| record.map_err(backend)?).collect()
}

/// A page of threads, newest first; `after`: below a cursor.
fn list_sql(after: bool) -> String {
    let base = format!("SELECT {THREAD_COLUMNS} FROM threads t LEFT JOIN runs r ON r.id = t.latest_run");
    let order = "ORDER BY t.created_at DESC, t.thread_id DESC";
    if after {
        format!(
            "{base} WHERE t.tenant = ?1 AND (t.created_at < ?2 OR (t.created_at = ?2 AND t.thread_id < ?3)) \
             {order} LIMIT ?4"
        )
    } else {
        format!("{base} WHERE t.tenant = ?1 {order} LIMIT ?2")
    }
}

pub(super) fn list_threads(conn: &Connection, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
    let limit = to_i64(query.limit as u64);
    let collect = |rows: rusqlite::MappedRows<'_, _>| -> Result<Vec<ThreadRecord>, StoreError> {
        rows.map(|thread: rusqlite::Result<Result<ThreadRecord, StoreError>>| thread.map_err(backend)?)
            .collect()
    };
    match &query.after {
        None => {
            let mut select = conn.prepare_cached(&list_sql(false)).map_err(backend)?;
            let rows = select
                .query_map(params![query.tenant.as_str(), limit], thread_from_row)
                .map_err(backend)?;
            collect(rows)
        }
        Some(after) => {
            let mut select = conn.prepare_cached(&list_sql(true)).map_err(backend)?;
            let rows = select
                .query_map(
                    params![
                        query.tenant.as_str(),
                        after.created_at.0,
                        after.id.as_str(),
                        limit
                    ],
                    thread_from_row,
                )
                .map_err(backend)?;
            collect(rows)
        }
    }
}

const IDLE_SQL: &str = "SELECT t.tenant, t.thread_id FROM threads t LEFT JOIN runs r ON r.id = t.latest_run \
     WHERE t.updated_at < ?1 \
     AND (r.id IS NULL OR (r.updated_at < ?1 AND r.status <> 'running')) \
     ORDER BY t.updated_at LIMIT ?2";

pub(super) fn idle_threads(
    conn: &Connection,
    cutoff: Timestamp,
    limit: usize,
) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
    let mut select = conn.prepare_cached(IDLE_SQL).map_err(backend)?;
    let rows = select
        .query_map(params![cutoff.0, to_i64(limit as u64)], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(backend)?;
    rows.map(|row| {
        let (tenant, id) = row.map_err(backend)?;
        record::thread_key(&tenant, &id)
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan SQLite picks for `sql`, one line per step.
    fn plan(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> String {
        let mut explain = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("explain");
        let steps = explain
            .query_map(params, |row| row.get::<_, String>(3))
            .expect("plan");
        steps
            .map(|step| step.expect("plan step"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn thread_queries_search_an_index_without_sorting() {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::migrate(&mut conn).expect("migrate");
        let cases: [(String, Vec<&dyn rusqlite::ToSql>); 4] = [
            (list_sql(false), vec![&"t", &10]),
            (list_sql(true), vec![&"t", &5, &"x", &10]),
            (thread_runs_sql(), vec![&"t", &"x"]),
            (IDLE_SQL.to_owned(), vec![&5, &10]),
        ];
        for (sql, params) in cases {
            let plan = plan(&conn, &sql, &params);
            assert!(!plan.contains("TEMP B-TREE"), "{sql} sorts:\n{plan}");
            assert!(
                plan.contains("SEARCH t USING") || plan.contains("SEARCH runs USING"),
                "{sql} scans:\n{plan}"
            );
        }
    }

    /// A thread delete reaches every table that keeps rows of a run: each
    /// table with a `run_id` column (but the runs themselves) is in the
    /// one list both SQL backends delete from.
    #[test]
    fn the_thread_cascade_names_every_table_of_a_run() {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::migrate(&mut conn).expect("migrate");
        let mut tables = conn
            .prepare(
                "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c \
                 WHERE m.type = 'table' AND c.name = 'run_id' ORDER BY m.name",
            )
            .expect("prepare")
            .query_map([], |row| row.get::<_, String>(0))
            .expect("query")
            .collect::<Result<Vec<_>, _>>()
            .expect("names");
        tables.retain(|table| table != "runs");
        let mut cascade: Vec<String> = THREAD_CASCADE.iter().map(|table| table.to_string()).collect();
        cascade.sort();
        assert_eq!(tables, cascade);
    }
}
