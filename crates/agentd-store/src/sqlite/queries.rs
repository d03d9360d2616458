//! The SQLite store's read queries beyond a single run: lookup by request
//! id, filtered keyset listing, the expiry sweep's due suspensions, counts
//! by status, and the health probe. Each is one indexed query on a reader
//! connection; none ever writes, and none that a caller or a schedule
//! issues sorts in a temporary B-tree (a test below checks the query
//! plans).

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use super::{backend, to_i64};
use crate::corrupt;
use crate::{RunQuery, StoreError};
use agentd_domain::{RunId, RunRecord, RunStatus, Tenant, Timestamp};

fn parse_id(id: &str) -> Result<RunId, StoreError> {
    RunId::from_str(id).map_err(|e| corrupt(format!("run id {id:?}: {e}")))
}

const REQUEST_SQL: &str = "SELECT id FROM runs WHERE tenant = ?1 AND request_id = ?2";

pub(super) fn find_run_by_request_id(
    conn: &Connection,
    tenant: &Tenant,
    request_id: &str,
) -> Result<Option<RunId>, StoreError> {
    let id: Option<String> = conn
        .prepare_cached(REQUEST_SQL)
        .and_then(|mut select| {
            select
                .query_row([tenant.as_str(), request_id], |row| row.get(0))
                .optional()
        })
        .map_err(backend)?;
    id.as_deref().map(parse_id).transpose()
}

/// The listing's SQL (see [`RunQuery::sql`]) and its parameters.
fn list_sql(query: &RunQuery) -> (String, Vec<Value>) {
    let mut values = filter_values(query);
    if let Some(before) = query.before {
        values.push(Value::Text(before.to_string()));
    }
    values.push(Value::Integer(to_i64(query.limit as u64)));
    let sql = query.sql(super::leases::RECORD_COLUMNS, |n| format!("?{n}"));
    (sql, values)
}

/// The parameters of the filters `query` sets, before `before`.
fn filter_values(query: &RunQuery) -> Vec<Value> {
    let mut values = Vec::new();
    if let Some(tenant) = &query.tenant {
        values.push(Value::Text(tenant.to_string()));
    }
    if let Some(status) = query.status {
        values.push(Value::Text(status.as_str().to_owned()));
    }
    if let Some(agent_id) = &query.agent_id {
        values.push(Value::Text(agent_id.clone()));
    }
    if let Some(after) = query.updated_after {
        values.push(Value::Integer(after.0));
    }
    values
}

/// How many runs pass `query`'s filters, on every page.
pub(super) fn count_runs(conn: &Connection, query: &RunQuery) -> Result<u64, StoreError> {
    let sql = query.count_sql(|n| format!("?{n}"));
    let count: i64 = conn
        .prepare_cached(&sql)
        .and_then(|mut select| {
            select.query_row(rusqlite::params_from_iter(filter_values(query)), |row| row.get(0))
        })
        .map_err(backend)?;
    Ok(u64::try_from(count).unwrap_or(0))
}

pub(super) fn list_runs(conn: &Connection, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
    let (sql, values) = list_sql(query);
    let mut select = conn.prepare_cached(&sql).map_err(backend)?;
    let rows = select
        .query_map(rusqlite::params_from_iter(values), super::leases::record_from_row)
        .map_err(backend)?;
    rows.map(|record| record.map_err(backend)?).collect()
}

/// The status is spelled out, not bound, so that SQLite can use the partial
/// index of suspended runs (see migration 0007).
const DUE_SQL: &str = "SELECT id FROM runs WHERE status = 'suspended' AND wakes_at <= ?1 \
                       ORDER BY wakes_at LIMIT ?2";

pub(super) fn due_suspensions(
    conn: &Connection,
    now: Timestamp,
    limit: usize,
) -> Result<Vec<RunId>, StoreError> {
    let mut select = conn.prepare_cached(DUE_SQL).map_err(backend)?;
    let rows = select
        .query_map(params![now.0, to_i64(limit as u64)], |row| {
            row.get::<_, String>(0)
        })
        .map_err(backend)?;
    rows.map(|id| parse_id(&id.map_err(backend)?)).collect()
}

pub(super) fn count_runs_by_agent(
    conn: &Connection,
    status: RunStatus,
) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut select = conn
        .prepare_cached(&crate::query::count_by_agent_sql(status))
        .map_err(backend)?;
    let rows = select
        .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
        .map_err(backend)?;
    rows.map(|row| {
        let (agent, count) = row.map_err(backend)?;
        Ok((agent, u64::try_from(count).unwrap_or(0)))
    })
    .collect()
}

/// Opens the database afresh (not from the pool, whose open connections
/// outlive a deleted or unreadable file) and reads its schema.
pub(super) fn ping(path: &Path) -> Result<(), StoreError> {
    let conn = super::readers::open_reader(path)?;
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| {
        row.get::<_, i64>(0)
    })
    .map_err(backend)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan SQLite picks for `sql`, one line per step.
    fn plan(conn: &Connection, sql: &str, values: Vec<Value>) -> String {
        let mut explain = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("explain");
        let steps = explain
            .query_map(rusqlite::params_from_iter(values), |row| row.get::<_, String>(3))
            .expect("plan");
        steps
            .map(|step| step.expect("plan step"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn migrated() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::migrate(&mut conn).expect("migrate");
        conn
    }

    #[test]
    fn every_listing_uses_an_index_and_no_sort() {
        let conn = migrated();
        let id = RunId::new();
        for tenant in [None, Some(Tenant::default())] {
            for status in [None, Some(RunStatus::Suspended)] {
                for agent_id in [None, Some("assistant".to_owned())] {
                    for before in [None, Some(id)] {
                        let query = RunQuery {
                            tenant: tenant.clone(),
                            status,
                            agent_id: agent_id.clone(),
                            updated_after: None,
                            before,
                            limit: 10,
                        };
                        let (sql, values) = list_sql(&query);
                        let plan = plan(&conn, &sql, values);
                        assert!(plan.contains("INDEX"), "{query:?} scans the table:\n{plan}");
                        // A caller's listing searches its tenant's runs in
                        // order; only the server's own bookkeeping (which
                        // this store answers with queries of its own) lists
                        // every tenant's.
                        if tenant.is_some() {
                            assert!(plan.contains("SEARCH"), "{query:?} scans:\n{plan}");
                            assert!(!plan.contains("TEMP B-TREE"), "{query:?} sorts:\n{plan}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn due_suspensions_and_request_lookup_search_an_index() {
        let conn = migrated();
        let due = plan(&conn, DUE_SQL, vec![Value::Integer(0), Value::Integer(10)]);
        assert!(
            due.contains("SEARCH runs USING INDEX runs_suspended_by_wake"),
            "{due}"
        );
        assert!(!due.contains("TEMP B-TREE"), "{due}");

        let values = vec![Value::Integer(0), Value::Integer(10)];
        let expired = plan(&conn, super::super::leases::EXPIRED_SQL, values);
        assert!(expired.contains("runs_running_by_lease"), "{expired}");
        assert!(!expired.contains("TEMP B-TREE"), "{expired}");

        let values = vec![Value::Text("default".into()), Value::Text("r".into())];
        let lookup = plan(&conn, REQUEST_SQL, values);
        assert!(lookup.contains("runs_by_tenant_request"), "{lookup}");
    }

    #[test]
    fn guarded_updates_find_their_run_by_its_key() {
        let conn = migrated();
        // The guard's id, version and first seq, then the values set.
        let values = |count| {
            let mut values = vec![Value::Text("r".into()), Value::Integer(1), Value::Integer(2)];
            values.resize(count, Value::Null);
            values
        };
        for (sql, count) in [
            (super::super::writer::UPDATE_RUN_SQL, 11),
            (super::super::leases::APPEND_SQL, 5),
        ] {
            let update = plan(&conn, sql, values(count));
            assert!(
                update.contains("SEARCH runs USING INDEX sqlite_autoindex_runs_1"),
                "{update}"
            );
            assert!(!update.contains("SCAN"), "{update}");
        }
    }

    #[test]
    fn counting_suspended_runs_reads_only_their_index() {
        let conn = migrated();
        let count = plan(
            &conn,
            &crate::query::count_by_agent_sql(RunStatus::Suspended),
            Vec::new(),
        );
        assert!(
            count.contains("COVERING INDEX runs_suspended_by_agent"),
            "{count}"
        );
        assert!(!count.contains("TEMP B-TREE"), "{count}");
    }
}
