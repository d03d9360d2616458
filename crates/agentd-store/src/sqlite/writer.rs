//! The SQLite store's writer thread: it owns the write connection and
//! commits whatever writes are waiting in one transaction (group commit: one
//! fsync for many runs). A write's first statement either changes its run's
//! row or changes nothing (the version and seq guard is in its `WHERE`), so
//! that a refused write leaves no trace and the others of its batch go
//! through, without a savepoint per write. Never called from an async task.

use rusqlite::{params, Connection};
use tokio::sync::mpsc;

use super::apply::{guard_sql, Applied, Guard, Reply};
use super::webhooks;
use super::{backend, leases, run_events, threads, RunRow, Write, WriteKind, MAX_BATCH};
use crate::record::EventBatch;
use crate::StoreError;

/// The writer thread: takes every write waiting, commits them in one
/// transaction, then answers each.
/// Marks `run_events` changed after each commit that stored a run event.
pub(super) fn write_loop(
    mut conn: Connection,
    mut queue: mpsc::UnboundedReceiver<Write>,
    run_events: tokio::sync::watch::Sender<()>,
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
        let (outcomes, stored_run_events) = commit_batch(&mut conn, &batch);
        if stored_run_events {
            run_events.send_replace(());
        }
        for (write, outcome) in batch.drain(..).zip(outcomes) {
            // The caller may have gone away; the write stands regardless.
            let _ = write.done.send(outcome);
        }
    }
}

/// Each write's outcome, and whether the commit stored a run event.
fn commit_batch(conn: &mut Connection, batch: &[Write]) -> (Vec<Result<Reply, StoreError>>, bool) {
    let fail_all = |error: StoreError| (batch.iter().map(|_| Err(error.clone())).collect(), false);
    let tx = match conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(error) => return fail_all(backend(error)),
    };
    let mut outcomes = Vec::with_capacity(batch.len());
    let mut stored_run_events = false;
    for write in batch {
        match apply(&tx, write) {
            Applied::Whole { run_event, reply } => {
                stored_run_events |= run_event;
                outcomes.push(Ok(reply));
            }
            Applied::Refused(error) => outcomes.push(Err(error)),
            // Part of the write may be in the transaction: undo the whole
            // batch (dropping `tx` rolls back). Only the engine failing
            // (I/O, disk full) gets here.
            Applied::Broken(error) => return fail_all(error),
        }
    }
    match tx.commit() {
        Ok(()) => (outcomes, stored_run_events),
        Err(error) => fail_all(backend(error)),
    }
}

fn apply(conn: &Connection, write: &Write) -> Applied {
    let events = write.events.as_ref();
    // Events must come after every stored one: after the run's stored
    // `last_seq`, which every write that stores events moves to their last.
    // So a run row is never stored behind its own events.
    let guard = |id, expected_version| Guard {
        id,
        expected_version,
        first_seq: events.map(|batch| batch.first_seq),
    };
    let behind = |run: &RunRow| events.and_then(|batch| batch.behind(run.last_seq));
    // The first statement changes the run's row, or nothing at all; the
    // run event, if the status changes, comes with it.
    let (run_id, first, change) = match &write.kind {
        WriteKind::Create { run, run_events } => {
            // A new id has no events yet; a taken one is refused by the
            // insert itself, which then changes nothing. Its thread must
            // still have the latest run the new one follows.
            if let Some(error) = behind(run) {
                return Applied::Refused(error);
            }
            if let Some(thread) = &run.thread {
                if let Err(error) = threads::check_advance(conn, run, thread) {
                    return Applied::Refused(error);
                }
            }
            if let Err(error) = insert_run(conn, run) {
                return Applied::Refused(error);
            }
            // Checked above: it cannot be refused any more.
            if let Some(thread) = &run.thread {
                if let Err(error) = threads::advance(conn, run, thread) {
                    return Applied::Broken(error);
                }
            }
            (&run.id, Ok(()), Some((run, run_events)))
        }
        // Refused by its first statement when there is no such thread.
        WriteKind::DeleteThread { tenant, thread_id } => {
            return match threads::delete(conn, tenant, thread_id) {
                Ok(()) => Applied::done(),
                Err(StoreError::NotFound) => Applied::Refused(StoreError::NotFound),
                Err(error) => Applied::Broken(error),
            };
        }
        WriteKind::Probe { at } => {
            let probed = conn
                .prepare_cached(
                    "INSERT INTO health_probe (id, probed_at) VALUES (1, ?1) \
                     ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
                )
                .and_then(|mut upsert| upsert.execute([at]));
            return match probed {
                Ok(_) => Applied::done(),
                Err(error) => Applied::Broken(backend(error)),
            };
        }
        // Refused by its first statement or not at all, like the others.
        WriteKind::Ledger(write) => return webhooks::apply(conn, write),
        WriteKind::Commit {
            run,
            expected_version,
            run_events,
        } => {
            let guard = guard(&run.id, *expected_version);
            // Refused for a wrong version first, as an update would be.
            let first = match behind(run) {
                Some(error) => Err(guard.refusal(conn, || error)),
                None => update_run(conn, run, &guard),
            };
            (&run.id, first, Some((run, run_events)))
        }
        WriteKind::Append {
            id,
            expected_version,
            last_seq,
            lease_expires_at,
        } => (
            id,
            leases::append(conn, &guard(id, *expected_version), *last_seq, *lease_expires_at),
            // An append keeps the run's status.
            None,
        ),
    };
    if let Err(error) = first {
        return Applied::Refused(error);
    }
    if let Err(error) = insert_events(conn, run_id, events) {
        return Applied::Broken(error);
    }
    let Some((run, kinds)) = change.filter(|(_, kinds)| !kinds.is_empty()) else {
        return Applied::done();
    };
    for kind in kinds {
        if let Err(error) = run_events::insert(conn, run, *kind) {
            return Applied::Broken(error);
        }
    }
    Applied::Whole {
        run_event: true,
        reply: Reply::Done,
    }
}

impl Applied {
    /// Applied, without a run event or anything to answer.
    pub(super) fn done() -> Self {
        Applied::Whole {
            run_event: false,
            reply: Reply::Done,
        }
    }
}

/// A commit's update of its run, under its [`Guard`].
pub(super) const UPDATE_RUN_SQL: &str = concat!(
    "UPDATE runs SET status = ?4, version = ?5, last_seq = ?6, updated_at = ?7, wakes_at = ?8, \
     record = ?9, lease_owner = ?10, lease_expires_at = ?11 WHERE ",
    guard_sql!()
);

fn insert_run(conn: &Connection, run: &RunRow) -> Result<(), StoreError> {
    let inserted = conn
        .prepare_cached(
            "INSERT INTO runs (id, agent_id, status, version, last_seq, created_at, updated_at, \
             wakes_at, request_id, record, lease_owner, lease_expires_at, tenant, thread_id) \
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
                run.wakes_at,
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

fn update_run(conn: &Connection, run: &RunRow, guard: &Guard<'_>) -> Result<(), StoreError> {
    let updated = conn
        .prepare_cached(UPDATE_RUN_SQL)
        .and_then(|mut update| {
            update.execute(params![
                guard.id,
                guard.expected_version,
                guard.first_seq,
                run.status,
                run.version,
                run.last_seq,
                run.updated_at,
                run.wakes_at,
                run.record,
                run.lease_owner,
                run.lease_expires_at
            ])
        })
        .map_err(backend)?;
    if updated == 1 {
        return Ok(());
    }
    Err(guard.refused_update(conn))
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
