//! The SQLite store's grants (migration 0014, see `store/grants.rs`): a put
//! and a delete, each one statement the writer thread applies, and the
//! read of a run's and a thread's.

use rusqlite::{params, Connection};

use super::backend;
use crate::{corrupt, StoreError};
use agentd_domain::{Grant, GrantScope, RunId, Tenant, ThreadId, Timestamp};

const COLUMNS: &str = "id, tenant, tool_name, scope, run_id, thread_id, granted_by, created_at, expires_at";

pub(super) fn put(conn: &Connection, grant: &Grant) -> Result<(), StoreError> {
    conn.prepare_cached(&format!(
        "INSERT INTO grants ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    ))
    .and_then(|mut insert| {
        insert.execute(params![
            grant.id,
            grant.tenant.as_str(),
            grant.tool_name,
            grant.scope.as_str(),
            grant.run_id.to_string(),
            grant.thread_id.as_ref().map(ThreadId::as_str),
            grant.granted_by,
            grant.created_at.0,
            grant.expires_at.map(|at| at.0),
        ])
    })
    .map_err(backend)?;
    Ok(())
}

pub(super) fn delete(conn: &Connection, tenant: &str, id: &str) -> Result<bool, StoreError> {
    let deleted = conn
        .prepare_cached("DELETE FROM grants WHERE tenant = ?1 AND id = ?2")
        .and_then(|mut delete| delete.execute([tenant, id]))
        .map_err(backend)?;
    Ok(deleted == 1)
}

/// `tenant`'s `Run` grants of `run` and `Thread` grants of `thread`.
pub(super) fn of(
    conn: &Connection,
    tenant: &Tenant,
    run: Option<RunId>,
    thread: Option<&ThreadId>,
) -> Result<Vec<Grant>, StoreError> {
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM grants WHERE tenant = ?1 AND \
             ((scope = 'run' AND run_id = ?2) OR (scope = 'thread' AND thread_id = ?3)) \
             ORDER BY created_at, id"
        ))
        .map_err(backend)?;
    let run = run.map(|id| id.to_string());
    let rows = select
        .query_map(
            params![tenant.as_str(), run, thread.map(ThreadId::as_str)],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, Option<String>>(5)?,
                    row.get::<_, String>(6)?,
                    row.get::<_, i64>(7)?,
                    row.get::<_, Option<i64>>(8)?,
                ))
            },
        )
        .map_err(backend)?;
    rows.map(|row| {
        let (id, tenant, tool_name, scope, run_id, thread_id, granted_by, created_at, expires_at) =
            row.map_err(backend)?;
        Ok(Grant {
            id,
            tenant: Tenant::new(&tenant).map_err(corrupt)?,
            tool_name,
            scope: GrantScope::parse(&scope).ok_or_else(|| corrupt(format!("grant scope {scope:?}")))?,
            run_id: run_id.parse().map_err(corrupt)?,
            thread_id: thread_id
                .as_deref()
                .map(ThreadId::new)
                .transpose()
                .map_err(corrupt)?,
            granted_by,
            created_at: Timestamp(created_at),
            expires_at: expires_at.map(Timestamp),
        })
    })
    .collect()
}
