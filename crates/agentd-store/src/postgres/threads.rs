//! The PostgreSQL store's threads: their reads, and the deletion of a
//! thread with its runs and their events in one transaction. A run of a
//! thread is created with its thread's compare-and-set in `create.rs`.

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;
use uuid::Uuid;

use super::read::{query, record, Client, RECORD_COLUMNS};
use super::{backend, to_i64};
use crate::threads::THREAD_CASCADE;
use crate::StoreError;
use agentd_domain::{RunRecord, Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp};

const THREAD_COLUMNS: &str = "t.tenant, t.thread_id, t.created_at, t.updated_at, t.latest_run, \
                              r.status, r.updated_at";
const THREAD_FROM: &str = "FROM threads t LEFT JOIN runs r ON r.id = t.latest_run";

fn thread(row: &Row) -> Result<ThreadRecord, StoreError> {
    let tenant: &str = row.try_get(0).map_err(backend)?;
    let id: &str = row.try_get(1).map_err(backend)?;
    let status: Option<&str> = row.try_get(5).map_err(backend)?;
    let latest_updated_at: Option<i64> = row.try_get(6).map_err(backend)?;
    crate::record::thread(
        (tenant, id),
        row.try_get(2).map_err(backend)?,
        row.try_get(3).map_err(backend)?,
        agentd_domain::RunId(row.try_get::<_, Uuid>(4).map_err(backend)?),
        status.zip(latest_updated_at),
    )
}

pub(super) async fn load_thread(
    client: &Client,
    tenant: &Tenant,
    id: &ThreadId,
) -> Result<ThreadRecord, StoreError> {
    let sql = format!("SELECT {THREAD_COLUMNS} {THREAD_FROM} WHERE t.tenant = $1 AND t.thread_id = $2");
    let rows = query(client, &sql, &[&tenant.as_str(), &id.as_str()]).await?;
    rows.first().map(thread).unwrap_or(Err(StoreError::NotFound))
}

pub(super) async fn thread_runs(
    client: &Client,
    tenant: &Tenant,
    id: &ThreadId,
) -> Result<Vec<RunRecord>, StoreError> {
    let sql = format!("SELECT {RECORD_COLUMNS} FROM runs WHERE tenant = $1 AND thread_id = $2 ORDER BY id");
    let rows = query(client, &sql, &[&tenant.as_str(), &id.as_str()]).await?;
    rows.iter().map(record).collect()
}

pub(super) async fn list_threads(
    client: &Client,
    thread_query: &ThreadQuery,
) -> Result<Vec<ThreadRecord>, StoreError> {
    let tenant = thread_query.tenant.as_str();
    let limit = to_i64(thread_query.limit as u64);
    let order = "ORDER BY t.created_at DESC, t.thread_id DESC";
    let rows = match &thread_query.after {
        None => {
            let sql = format!("SELECT {THREAD_COLUMNS} {THREAD_FROM} WHERE t.tenant = $1 {order} LIMIT $2");
            query(client, &sql, &[&tenant, &limit]).await?
        }
        Some(after) => {
            let sql = format!(
                "SELECT {THREAD_COLUMNS} {THREAD_FROM} WHERE t.tenant = $1 \
                 AND (t.created_at, t.thread_id) < ($2, $3) {order} LIMIT $4"
            );
            query(
                client,
                &sql,
                &[&tenant, &after.created_at.0, &after.id.as_str(), &limit],
            )
            .await?
        }
    };
    rows.iter().map(thread).collect()
}

pub(super) async fn delete_thread(
    client: &mut Client,
    tenant: &Tenant,
    id: &ThreadId,
) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(backend)?;
    let params: [&(dyn ToSql + Sync); 2] = [&tenant.as_str(), &id.as_str()];
    let deleted = tx
        .execute(
            "DELETE FROM threads WHERE tenant = $1 AND thread_id = $2",
            &params,
        )
        .await
        .map_err(backend)?;
    if deleted == 0 {
        return Err(StoreError::NotFound);
    }
    for table in THREAD_CASCADE {
        let sql = format!(
            "DELETE FROM {table} e USING runs r WHERE e.run_id = r.id AND r.tenant = $1 AND r.thread_id = $2"
        );
        tx.execute(&sql, &params).await.map_err(backend)?;
    }
    tx.execute("DELETE FROM runs WHERE tenant = $1 AND thread_id = $2", &params)
        .await
        .map_err(backend)?;
    tx.commit().await.map_err(backend)
}

pub(super) async fn idle_threads(
    client: &Client,
    cutoff: Timestamp,
    limit: usize,
) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
    let sql = format!(
        "SELECT t.tenant, t.thread_id {THREAD_FROM} WHERE t.updated_at < $1 \
         AND (r.id IS NULL OR (r.updated_at < $1 AND r.status <> 'running')) \
         ORDER BY t.updated_at LIMIT $2"
    );
    let rows = query(client, &sql, &[&cutoff.0, &to_i64(limit as u64)]).await?;
    rows.iter()
        .map(|row| {
            let tenant: &str = row.try_get(0).map_err(backend)?;
            let id: &str = row.try_get(1).map_err(backend)?;
            crate::record::thread_key(tenant, id)
        })
        .collect()
}
