//! The SQLite store's A2A push notification configurations (migration
//! 0012, see `store/push_configs.rs`): a put and a delete, each one
//! statement the writer thread applies, and the read of a run's.

use rusqlite::{params, Connection};

use super::backend;
use crate::{corrupt, PushConfig, StoreError};
use agentd_domain::{RunId, Tenant, Timestamp};

const COLUMNS: &str = "run_id, id, tenant, url, token, auth_scheme, auth_credentials, created_at";

pub(super) fn put(conn: &Connection, config: &PushConfig) -> Result<(), StoreError> {
    conn.prepare_cached(&format!(
        "INSERT OR REPLACE INTO a2a_push_configs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
    ))
    .and_then(|mut insert| {
        insert.execute(params![
            config.run_id.to_string(),
            config.id,
            config.tenant.as_str(),
            config.url,
            config.token,
            config.auth_scheme,
            config.auth_credentials,
            config.created_at.0,
        ])
    })
    .map_err(backend)?;
    Ok(())
}

pub(super) fn delete(conn: &Connection, run_id: RunId, id: &str) -> Result<bool, StoreError> {
    let deleted = conn
        .prepare_cached("DELETE FROM a2a_push_configs WHERE run_id = ?1 AND id = ?2")
        .and_then(|mut delete| delete.execute(params![run_id.to_string(), id]))
        .map_err(backend)?;
    Ok(deleted == 1)
}

/// The configurations of `run_ids` (sorted, without repeats), by run and
/// id, read on one connection.
pub(super) fn of_runs(conn: &Connection, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError> {
    // Most stores have none at all: one look then spares a lookup per run.
    let any: bool = conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM a2a_push_configs)")
        .and_then(|mut select| select.query_row([], |row| row.get(0)))
        .map_err(backend)?;
    if !any {
        return Ok(Vec::new());
    }
    let mut configs = Vec::new();
    for &run_id in run_ids {
        configs.extend(of_run(conn, run_id)?);
    }
    Ok(configs)
}

fn of_run(conn: &Connection, run_id: RunId) -> Result<Vec<PushConfig>, StoreError> {
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM a2a_push_configs WHERE run_id = ?1 ORDER BY id"
        ))
        .map_err(backend)?;
    let rows = select
        .query_map([run_id.to_string()], |row| {
            Ok((
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, String>(6)?,
                row.get::<_, i64>(7)?,
            ))
        })
        .map_err(backend)?;
    rows.map(|row| {
        let (id, tenant, url, token, auth_scheme, auth_credentials, created_at) = row.map_err(backend)?;
        Ok(PushConfig {
            run_id,
            id,
            tenant: Tenant::new(&tenant).map_err(corrupt)?,
            url,
            token,
            auth_scheme,
            auth_credentials,
            created_at: Timestamp(created_at),
        })
    })
    .collect()
}
