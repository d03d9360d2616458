//! The PostgreSQL store's A2A push notification configurations (migration
//! 0012, see `store/push_configs.rs`): each write one statement.

use tokio_postgres::types::ToSql;

use super::backend;
use super::read::{query, Client};
use crate::{corrupt, PushConfig, StoreError};
use agentd_domain::{RunId, Tenant, Timestamp};

pub(super) async fn put(client: &Client, config: &PushConfig) -> Result<(), StoreError> {
    let params: [&(dyn ToSql + Sync); 8] = [
        &config.run_id.0,
        &config.id,
        &config.tenant.as_str(),
        &config.url,
        &config.token,
        &config.auth_scheme,
        &config.auth_credentials,
        &config.created_at.0,
    ];
    query(
        client,
        "INSERT INTO a2a_push_configs (run_id, id, tenant, url, token, auth_scheme, auth_credentials, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id, id) DO UPDATE SET \
         tenant = excluded.tenant, url = excluded.url, token = excluded.token, \
         auth_scheme = excluded.auth_scheme, auth_credentials = excluded.auth_credentials, \
         created_at = excluded.created_at",
        &params,
    )
    .await?;
    Ok(())
}

pub(super) async fn delete(client: &Client, run_id: RunId, id: &str) -> Result<bool, StoreError> {
    let rows = query(
        client,
        "DELETE FROM a2a_push_configs WHERE run_id = $1 AND id = $2 RETURNING 1",
        &[&run_id.0, &id],
    )
    .await?;
    Ok(!rows.is_empty())
}

/// The configurations of `run_ids`, by run and id, in one statement.
pub(super) async fn of_runs(client: &Client, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError> {
    let ids: Vec<uuid::Uuid> = run_ids.iter().map(|id| id.0).collect();
    let rows = query(
        client,
        "SELECT id, tenant, url, token, auth_scheme, auth_credentials, created_at, run_id \
         FROM a2a_push_configs WHERE run_id = ANY($1) ORDER BY run_id, id",
        &[&ids],
    )
    .await?;
    rows.iter()
        .map(|row| {
            let tenant: String = row.try_get(1).map_err(backend)?;
            Ok(PushConfig {
                run_id: RunId(row.try_get(7).map_err(backend)?),
                id: row.try_get(0).map_err(backend)?,
                tenant: Tenant::new(&tenant).map_err(corrupt)?,
                url: row.try_get(2).map_err(backend)?,
                token: row.try_get(3).map_err(backend)?,
                auth_scheme: row.try_get(4).map_err(backend)?,
                auth_credentials: row.try_get(5).map_err(backend)?,
                created_at: Timestamp(row.try_get(6).map_err(backend)?),
            })
        })
        .collect()
}
