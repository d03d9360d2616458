//! The PostgreSQL store's grants (migration 0014, see `store/grants.rs`):
//! each write one statement, read by every replica.

use tokio_postgres::types::ToSql;

use super::backend;
use super::read::{query, Client};
use crate::{corrupt, StoreError};
use agentd_domain::{Grant, GrantScope, RunId, Tenant, ThreadId, Timestamp};

pub(super) async fn put(client: &Client, grant: &Grant) -> Result<(), StoreError> {
    let thread_id = grant.thread_id.as_ref().map(ThreadId::as_str);
    let expires_at = grant.expires_at.map(|at| at.0);
    let params: [&(dyn ToSql + Sync); 9] = [
        &grant.id,
        &grant.tenant.as_str(),
        &grant.tool_name,
        &grant.scope.as_str(),
        &grant.run_id.0,
        &thread_id,
        &grant.granted_by,
        &grant.created_at.0,
        &expires_at,
    ];
    query(
        client,
        "INSERT INTO grants (id, tenant, tool_name, scope, run_id, thread_id, granted_by, created_at, \
         expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &params,
    )
    .await?;
    Ok(())
}

pub(super) async fn delete(client: &Client, tenant: &Tenant, id: &str) -> Result<bool, StoreError> {
    let rows = query(
        client,
        "DELETE FROM grants WHERE tenant = $1 AND id = $2 RETURNING 1",
        &[&tenant.as_str(), &id],
    )
    .await?;
    Ok(!rows.is_empty())
}

/// `tenant`'s `Run` grants of `run` and `Thread` grants of `thread`.
pub(super) async fn of(
    client: &Client,
    tenant: &Tenant,
    run: Option<RunId>,
    thread: Option<&ThreadId>,
) -> Result<Vec<Grant>, StoreError> {
    let run = run.map(|id| id.0);
    let thread = thread.map(ThreadId::as_str);
    let rows = query(
        client,
        "SELECT id, tenant, tool_name, scope, run_id, thread_id, granted_by, created_at, expires_at \
         FROM grants WHERE tenant = $1 AND \
         ((scope = 'run' AND run_id = $2) OR (scope = 'thread' AND thread_id = $3)) \
         ORDER BY created_at, id",
        &[&tenant.as_str(), &run, &thread],
    )
    .await?;
    rows.iter()
        .map(|row| {
            let tenant: String = row.try_get(1).map_err(backend)?;
            let scope: String = row.try_get(3).map_err(backend)?;
            let thread_id: Option<String> = row.try_get(5).map_err(backend)?;
            let expires_at: Option<i64> = row.try_get(8).map_err(backend)?;
            Ok(Grant {
                id: row.try_get(0).map_err(backend)?,
                tenant: Tenant::new(&tenant).map_err(corrupt)?,
                tool_name: row.try_get(2).map_err(backend)?,
                scope: GrantScope::parse(&scope).ok_or_else(|| corrupt(format!("grant scope {scope:?}")))?,
                run_id: RunId(row.try_get(4).map_err(backend)?),
                thread_id: thread_id
                    .as_deref()
                    .map(ThreadId::new)
                    .transpose()
                    .map_err(corrupt)?,
                granted_by: row.try_get(6).map_err(backend)?,
                created_at: Timestamp(row.try_get(7).map_err(backend)?),
                expires_at: expires_at.map(Timestamp),
            })
        })
        .collect()
}
