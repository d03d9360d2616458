//! The PostgreSQL store's reads: one indexed query each, on a pooled
//! connection, with statements prepared once per connection. Never writes.

use std::collections::BTreeMap;

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;
use uuid::Uuid;

use super::presence::live_replicas;
use super::{backend, to_i64};
use crate::{Holder, Orphan, RunQuery, StoreError};
use agentd_domain::{Event, RunId, RunRecord, RunStatus, Tenant, Timestamp};

pub(super) type Client = deadpool_postgres::Object;

pub(super) use crate::record::RECORD_COLUMNS;

pub(super) fn record(row: &Row) -> Result<RunRecord, StoreError> {
    let record: Vec<u8> = row.try_get(0).map_err(backend)?;
    let version: i64 = row.try_get(1).map_err(backend)?;
    let last_seq: i64 = row.try_get(2).map_err(backend)?;
    let lease_expires_at: Option<i64> = row.try_get(3).map_err(backend)?;
    crate::record::overlay(&record, version, last_seq, lease_expires_at)
}

pub(super) async fn query(
    client: &Client,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, StoreError> {
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    client.query(&statement, params).await.map_err(backend)
}

fn ids(rows: Vec<Row>) -> Result<Vec<RunId>, StoreError> {
    rows.iter()
        .map(|row| row.try_get::<_, Uuid>(0).map(RunId).map_err(backend))
        .collect()
}

pub(super) async fn load_run(client: &Client, id: RunId) -> Result<RunRecord, StoreError> {
    let sql = format!("SELECT {RECORD_COLUMNS} FROM runs WHERE id = $1");
    let rows = query(client, &sql, &[&id.0]).await?;
    rows.first().map(record).unwrap_or(Err(StoreError::NotFound))
}

pub(super) async fn read_events(
    client: &Client,
    id: RunId,
    after_seq: u64,
) -> Result<Vec<Event>, StoreError> {
    // One round trip: no row means no run; a row of NULLs, a run with no
    // events after `after_seq`.
    let sql = "SELECT b.events FROM runs r \
               LEFT JOIN event_batches b ON b.run_id = r.id AND b.last_seq > $2 \
               WHERE r.id = $1 ORDER BY b.last_seq";
    let rows = query(client, sql, &[&id.0, &to_i64(after_seq)]).await?;
    if rows.is_empty() {
        return Err(StoreError::NotFound);
    }
    let mut events = Vec::new();
    for row in &rows {
        if let Some(batch) = row.try_get::<_, Option<Vec<u8>>>(0).map_err(backend)? {
            crate::record::extend_events(&mut events, &batch, after_seq)?;
        }
    }
    Ok(events)
}

pub(super) async fn find_run_by_request_id(
    client: &Client,
    tenant: &Tenant,
    request_id: &str,
) -> Result<Option<RunId>, StoreError> {
    let rows = query(
        client,
        "SELECT id FROM runs WHERE tenant = $1 AND request_id = $2",
        &[&tenant.as_str(), &request_id],
    )
    .await?;
    Ok(ids(rows)?.into_iter().next())
}

pub(super) async fn list_runs(client: &Client, run_query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
    // The parameters of `RunQuery::sql`, in its order.
    let filters = Filters::of(run_query);
    let before = run_query.before.map(|id| id.0);
    let limit = to_i64(run_query.limit as u64);
    let mut params = filters.params();
    if let Some(before) = &before {
        params.push(before);
    }
    params.push(&limit);
    let sql = run_query.sql(RECORD_COLUMNS, |n| format!("${n}"));
    let rows = query(client, &sql, &params).await?;
    rows.iter().map(record).collect()
}

/// How many runs pass `run_query`'s filters, on every page.
pub(super) async fn count_runs(client: &Client, run_query: &RunQuery) -> Result<u64, StoreError> {
    let filters = Filters::of(run_query);
    let sql = run_query.count_sql(|n| format!("${n}"));
    let rows = query(client, &sql, &filters.params()).await?;
    let count: i64 = rows.first().map_or(0, |row| row.get(0));
    Ok(u64::try_from(count).unwrap_or(0))
}

/// The filters of a run query as PostgreSQL parameters.
struct Filters<'a> {
    tenant: Option<&'a str>,
    status: Option<&'static str>,
    agent_id: Option<&'a String>,
    updated_after: Option<i64>,
}

impl<'a> Filters<'a> {
    fn of(run_query: &'a RunQuery) -> Self {
        Self {
            tenant: run_query.tenant.as_ref().map(Tenant::as_str),
            status: run_query.status.map(RunStatus::as_str),
            agent_id: run_query.agent_id.as_ref(),
            updated_after: run_query.updated_after.map(|at| at.0),
        }
    }

    /// The parameters of the filters set, in `RunQuery::sql`'s order.
    fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if let Some(tenant) = &self.tenant {
            params.push(tenant);
        }
        if let Some(status) = &self.status {
            params.push(status);
        }
        if let Some(agent_id) = &self.agent_id {
            params.push(*agent_id);
        }
        if let Some(after) = &self.updated_after {
            params.push(after);
        }
        params
    }
}

/// The status is spelled out, not bound, so that the plan uses the partial
/// index of suspended runs (see migration 0008).
const DUE_SQL: &str = "SELECT id FROM runs WHERE status = 'suspended' AND wakes_at <= $1 \
                       ORDER BY wakes_at LIMIT $2";

pub(super) async fn due_suspensions(
    client: &Client,
    now: Timestamp,
    limit: usize,
) -> Result<Vec<RunId>, StoreError> {
    let rows = query(client, DUE_SQL, &[&now.0, &to_i64(limit as u64)]).await?;
    ids(rows)
}

/// Running runs whose lease expired, or whose registered holder holds its
/// lock no more (see `presence.rs`); a holder that never registered is
/// judged by its lease alone. The status is spelled out, not bound: the
/// partial index of running runs (see migration 0008).
fn orphaned_sql() -> String {
    format!(
        "WITH {} \
         SELECT r.id, r.lease_owner, p.replica_id IS NOT NULL, \
         coalesce(r.lease_owner IN (SELECT replica_id FROM live), false) \
         FROM runs r LEFT JOIN replicas p ON p.replica_id = r.lease_owner \
         WHERE r.status = 'running' AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= $1 \
         OR (p.replica_id IS NOT NULL AND p.replica_id NOT IN (SELECT replica_id FROM live))) \
         ORDER BY r.lease_expires_at NULLS FIRST LIMIT $2",
        live_replicas()
    )
}

pub(super) async fn orphaned_runs(
    client: &Client,
    now: Timestamp,
    limit: usize,
) -> Result<Vec<Orphan>, StoreError> {
    let rows = query(client, &orphaned_sql(), &[&now.0, &to_i64(limit as u64)]).await?;
    rows.iter().map(orphan).collect()
}

fn orphan(row: &Row) -> Result<Orphan, StoreError> {
    let id = RunId(row.try_get(0).map_err(backend)?);
    let owner: Option<String> = row.try_get(1).map_err(backend)?;
    let registered: bool = row.try_get(2).map_err(backend)?;
    let live: bool = row.try_get(3).map_err(backend)?;
    let holder = match (registered, live, owner) {
        (true, false, Some(owner)) => Holder::Gone { owner },
        (true, true, _) => Holder::Live,
        _ => Holder::Unknown,
    };
    Ok(Orphan { id, holder })
}

pub(super) async fn count_runs_by_agent(
    client: &Client,
    status: RunStatus,
) -> Result<BTreeMap<String, u64>, StoreError> {
    let rows = query(client, &crate::query::count_by_agent_sql(status), &[]).await?;
    rows.iter()
        .map(|row| {
            let agent: String = row.try_get(0).map_err(backend)?;
            let count: i64 = row.try_get(1).map_err(backend)?;
            Ok((agent, u64::try_from(count).unwrap_or(0)))
        })
        .collect()
}
