//! The SQLite store's writer thread: it owns the write connection and
//! commits whatever writes are waiting in one transaction (group commit: one
//! fsync for many runs). Each write is checked before it changes anything,
//! so that a refused write leaves no trace and the others of its batch go
//! through, without a savepoint per write. Never called from an async task.

use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::mpsc;

use super::recent::RecentRuns;
use super::{backend, leases, threads, EventBatch, RunRow, Write, WriteKind, MAX_BATCH};
use crate::store::StoreError;

/// The writer thread: takes every write waiting, commits them in one
/// transaction, brings `recent` up to what it stored, then answers each.
pub(super) fn write_loop(
    mut conn: Connection,
    mut queue: mpsc::UnboundedReceiver<Write>,
    recent: &RecentRuns,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        let outcomes = commit_batch(&mut conn, &batch);
        for (write, outcome) in batch.drain(..).zip(outcomes) {
            if outcome.is_ok() {
                recent.committed(write.change);
            }
            // The caller may have gone away; the write stands regardless.
            let _ = write.done.send(outcome);
        }
    }
}

fn commit_batch(conn: &mut Connection, batch: &[Write]) -> Vec<Result<(), StoreError>> {
    let fail_all = |message: String| {
        batch
            .iter()
            .map(|_| Err(StoreError::Backend(message.clone())))
            .collect()
    };
    let tx = match conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(error) => return fail_all(error.to_string()),
    };
    let mut outcomes = Vec::with_capacity(batch.len());
    for write in batch {
        match apply(&tx, write) {
            Applied::Whole => outcomes.push(Ok(())),
            Applied::Refused(error) => outcomes.push(Err(error)),
            // Part of the write may be in the transaction: undo the whole
            // batch (dropping `tx` rolls back). Only the engine failing
            // (I/O, disk full) gets here.
            Applied::Broken(error) => {
                return fail_all(format!("the batch was rolled back: {error}"));
            }
        }
    }
    match tx.commit() {
        Ok(()) => outcomes,
        Err(error) => fail_all(error.to_string()),
    }
}

/// What applying one write of a batch came to. A write is checked before
/// it changes anything (the id, the version guard, the seqs of its events),
/// so that it needs no savepoint of its own: a refused write left no trace,
/// and an applied one cannot fail halfway for any reason but the engine
/// failing.
enum Applied {
    Whole,
    /// Refused before any change.
    Refused(StoreError),
    /// Failed after changing part of the transaction.
    Broken(StoreError),
}

fn apply(conn: &Connection, write: &Write) -> Applied {
    let events = write.events.as_ref();
    let checked = match &write.kind {
        // A new id has no events yet; a taken one is refused by the insert
        // itself, which then changes nothing. Its thread must still have
        // the latest run the new one follows.
        WriteKind::Create(run) => match &run.thread {
            Some(thread) => threads::check_advance(conn, run, thread),
            None => Ok(()),
        },
        // Refused by its first statement when there is no such thread.
        WriteKind::DeleteThread { .. } => Ok(()),
        WriteKind::Commit {
            run,
            expected_version,
        } => check_existing(conn, &run.id, *expected_version, events),
        WriteKind::Append {
            id, expected_version, ..
        } => check_existing(conn, id, *expected_version, events),
    };
    if let Err(error) = checked {
        return Applied::Refused(error);
    }
    // The first statement changes the run's row, or nothing at all.
    let (run_id, first) = match &write.kind {
        WriteKind::Create(run) => {
            if let Err(error) = insert_run(conn, run) {
                return Applied::Refused(error);
            }
            // Checked above: it cannot be refused any more.
            if let Some(thread) = &run.thread {
                if let Err(error) = threads::advance(conn, run, thread) {
                    return Applied::Broken(error);
                }
            }
            (&run.id, Ok(()))
        }
        WriteKind::DeleteThread { tenant, thread_id } => {
            return match threads::delete(conn, tenant, thread_id) {
                Ok(()) => Applied::Whole,
                Err(StoreError::NotFound) => Applied::Refused(StoreError::NotFound),
                Err(error) => Applied::Broken(error),
            };
        }
        WriteKind::Commit {
            run,
            expected_version,
        } => (&run.id, update_run(conn, run, *expected_version)),
        WriteKind::Append {
            id,
            expected_version,
            last_seq,
            lease_expires_at,
        } => (
            id,
            leases::append(conn, id, *expected_version, *last_seq, *lease_expires_at),
        ),
    };
    if let Err(error) = first {
        return Applied::Refused(error);
    }
    match insert_events(conn, run_id, events) {
        Ok(()) => Applied::Whole,
        Err(error) => Applied::Broken(error),
    }
}

const EXISTING_SQL: &str =
    "SELECT version, (SELECT max(last_seq) FROM event_batches WHERE run_id = ?1) FROM runs WHERE id = ?1";

/// Refuses a write to run `id` unless the run exists at
/// `expected_version` and `events` start after every stored event of it,
/// so that neither the guarded update nor the event inserts can fail.
fn check_existing(
    conn: &Connection,
    id: &str,
    expected_version: i64,
    events: Option<&EventBatch>,
) -> Result<(), StoreError> {
    // One lookup for both: the version, and the run's last stored seq
    // (an index seek on the event rows' primary key).
    let stored: Option<(i64, Option<i64>)> = conn
        .prepare_cached(EXISTING_SQL)
        .and_then(|mut select| {
            select
                .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .map_err(backend)?;
    let Some((actual, last_stored)) = stored else {
        return Err(StoreError::NotFound);
    };
    if actual != expected_version {
        return Err(StoreError::VersionConflict {
            expected: expected_version as u64,
            actual: actual as u64,
        });
    }
    match (events, last_stored) {
        (Some(batch), Some(stored)) if batch.first_seq <= stored => Err(StoreError::Backend(format!(
            "event seq {} is stored already (the run's last stored seq is {stored})",
            batch.first_seq
        ))),
        _ => Ok(()),
    }
}

fn insert_run(conn: &Connection, run: &RunRow) -> Result<(), StoreError> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO runs (id, agent_id, status, version, last_seq, created_at, updated_at, \
             expires_at, request_id, record, lease_owner, lease_expires_at, tenant, thread_id) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut insert| {
            insert.execute(params![
                run.id,
                run.agent_id,
                run.status,
                run.version,
                run.last_seq,
                run.created_at,
                run.updated_at,
                run.expires_at,
                run.request_id,
                run.record,
                run.lease_owner,
                run.lease_expires_at,
                run.tenant,
                run.thread.as_ref().map(|thread| thread.id.as_str())
            ])
        })
        .map_err(backend)?;
    if inserted == 0 {
        return Err(StoreError::AlreadyExists);
    }
    Ok(())
}

fn update_run(conn: &Connection, run: &RunRow, expected_version: i64) -> Result<(), StoreError> {
    let updated = conn
        .prepare_cached(
            "UPDATE runs SET status = ?2, version = ?3, last_seq = ?4, updated_at = ?5, \
             expires_at = ?6, record = ?7, lease_owner = ?9, lease_expires_at = ?10 \
             WHERE id = ?1 AND version = ?8",
        )
        .and_then(|mut update| {
            update.execute(params![
                run.id,
                run.status,
                run.version,
                run.last_seq,
                run.updated_at,
                run.expires_at,
                run.record,
                expected_version,
                run.lease_owner,
                run.lease_expires_at
            ])
        })
        .map_err(backend)?;
    if updated == 1 {
        return Ok(());
    }
    Err(leases::refusal(conn, &run.id, expected_version)?)
}

fn insert_events(conn: &Connection, run_id: &str, events: Option<&EventBatch>) -> Result<(), StoreError> {
    let Some(batch) = events else {
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT INTO event_batches (run_id, last_seq, first_seq, events) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut insert| insert.execute(params![run_id, batch.last_seq, batch.first_seq, batch.events]))
    .map_err(backend)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_of_an_existing_run_searches_two_indexes() {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::migrate(&mut conn).expect("migrate");
        let mut explain = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {EXISTING_SQL}"))
            .expect("explain");
        let plan = explain
            .query_map(["r"], |row| row.get::<_, String>(3))
            .expect("plan")
            .map(|step| step.expect("plan step"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!plan.contains("SCAN"), "{plan}");
        assert_eq!(plan.matches("SEARCH").count(), 2, "{plan}");
    }
}
