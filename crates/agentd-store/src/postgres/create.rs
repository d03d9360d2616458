//! The PostgreSQL store's create of a run: one statement, the run row and
//! its first events (see `write.rs`), or, for a run of a thread, one
//! transaction: the compare-and-set on the thread row (insert it, or move
//! its latest run from the one the new run follows), then that statement;
//! concurrent starts on one thread serialise on the thread row, so exactly
//! one of them commits.

use tokio_postgres::types::ToSql;

use super::write::{
    event_row, execute, insert_run_events, run_event_params, suspension_pending, RunEventParams,
    INSERT_EVENTS,
};
use super::{backend, to_i64, PostgresStore};
use crate::StoreError;
use agentd_domain::{Event, RunEventKind, RunRecord};

/// A write statement answers with two counts: run rows it changed (0 or
/// 1), and run events it stored; those that announce themselves, then
/// with whether anyone else listens.
fn create_sql() -> String {
    format!(
        "WITH changed AS (INSERT INTO runs (id, agent_id, status, version, last_seq, created_at, \
         updated_at, wakes_at, request_id, lease_owner, lease_expires_at, record, tenant, thread_id) \
         VALUES ($1, $5, $6, $7, $8, $9, $10, $22, $12, $13, $14, $15, $16, $17) \
         ON CONFLICT DO NOTHING RETURNING id), \
         inserted AS ({INSERT_EVENTS}), \
         run_event AS ({run_events}) \
         SELECT (SELECT count(*) FROM changed), (SELECT count(*) FROM run_event)",
        run_events = insert_run_events(&RunEventParams {
            tenant: 16,
            agent_id: 5,
            thread_id: 17,
            time: 10,
            pending: 18,
            expires_at: 11,
            kinds: 19,
            statuses: 20,
            decisions: 21,
        })
    )
}

pub(super) async fn create(
    store: &PostgresStore,
    run: &RunRecord,
    events: &[Event],
) -> Result<(), StoreError> {
    let batch = event_row(events)?;
    if let Some(error) = batch.behind(run.last_seq()) {
        return Err(error);
    }
    let record = crate::record::encode_run_plain(run)?;
    let lease_owner = run.lease().as_ref().map(|lease| lease.owner.as_str());
    let lease_expires_at = run.lease().as_ref().map(|lease| lease.expires_at.0);
    let tenant = run.tenant.as_str();
    let thread_id = run.thread.as_ref().map(|link| link.id.as_str());
    let (kinds, statuses) =
        run_event_params(&RunEventKind::of_write(Some(RunEventKind::Started), run.status()));
    let pending = suspension_pending(run)?;
    let decisions = crate::record::event_decisions(run, true)?;
    let wakes_at = run.wakes_at().map(|at| at.0);
    let params: [&(dyn ToSql + Sync); 22] = [
        &run.id.0,
        &batch.first_seq,
        &batch.last_seq,
        &batch.events,
        &run.agent_id,
        &run.status().as_str(),
        &to_i64(run.version()),
        &to_i64(run.last_seq()),
        &run.created_at.0,
        &run.updated_at.0,
        &run.expires_at().map(|at| at.0),
        &run.request_id,
        &lease_owner,
        &lease_expires_at,
        &record,
        &tenant,
        &thread_id,
        &pending,
        &kinds,
        &statuses,
        &decisions,
        &wakes_at,
    ];
    if run.thread.is_some() {
        return create_in_thread(store, run, &params).await;
    }
    if execute(store, &create_sql(), &params, None).await? {
        Ok(())
    } else {
        Err(StoreError::AlreadyExists)
    }
}

/// Creates `run` (a run of a thread) with the create statement's `params`.
pub(super) async fn create_in_thread(
    store: &PostgresStore,
    run: &RunRecord,
    params: &[&(dyn ToSql + Sync)],
) -> Result<(), StoreError> {
    let Some(link) = &run.thread else {
        return Err(StoreError::Corrupt("a thread run without its thread".into()));
    };
    let mut client = store.client().await?;
    let tx = client.transaction().await.map_err(backend)?;
    let tenant = run.tenant.as_str();
    let thread_id = link.id.as_str();
    let advanced = match link.previous {
        None => {
            tx.execute(
                "INSERT INTO threads (tenant, thread_id, created_at, updated_at, latest_run) \
                 VALUES ($1, $2, $3, $3, $4) ON CONFLICT DO NOTHING",
                &[&tenant, &thread_id, &run.created_at.0, &run.id.0],
            )
            .await
        }
        Some(previous) => {
            tx.execute(
                "UPDATE threads SET latest_run = $3, updated_at = $4 \
                 WHERE tenant = $1 AND thread_id = $2 AND latest_run = $5",
                &[&tenant, &thread_id, &run.id.0, &run.created_at.0, &previous.0],
            )
            .await
        }
    }
    .map_err(backend)?;
    if advanced == 0 {
        // Dropping the transaction rolls it back.
        return Err(StoreError::ThreadMoved);
    }
    let statement = tx.prepare_cached(&create_sql()).await.map_err(backend)?;
    let created = tx.query_one(&statement, params).await.map_err(backend)?;
    if created.get::<_, i64>(0) != 1 {
        return Err(StoreError::AlreadyExists);
    }
    tx.commit().await.map_err(backend)?;
    store.run_event_stored();
    Ok(())
}
