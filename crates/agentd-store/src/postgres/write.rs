//! The PostgreSQL store's writes. Each is ONE statement, so one round trip
//! and atomic by itself: a data-modifying CTE changes the run row under the
//! version compare-and-set and inserts the write's events as one row (all
//! its chunks encoded together) only if the row changed. Concurrent writes of
//! different runs on different pooled connections share WAL flushes through
//! PostgreSQL's own group commit.
//!
//! The NOTIFY that tells other replicas is a statement of its own, right
//! after the write commits, on the same connection, and only when another
//! server listens (the write's statement says whether one is registered,
//! see `listen.rs`): a lone server sends none. Inside the write it
//! would be atomic with it, but PostgreSQL serialises the commits of all
//! notifying transactions of a database (a lock held across the WAL flush),
//! which defeats group commit: measured with pgbench here (32 clients, a
//! disk that syncs in 5 ms), an insert and a NOTIFY in one transaction ran
//! at 545 a second, the same as two statements at 2,490, and the insert
//! alone at 3,780. A transaction that only notifies writes no WAL and holds
//! that lock only briefly. The price: a process that dies between the two leaves that one
//! write unannounced; followers then learn of it from the next write's
//! notification, or from their periodic check of the store (see
//! `runtime/fanout/subscribe.rs`).

use tokio_postgres::types::ToSql;

use super::{backend, to_i64, PostgresStore};
use crate::corrupt;
use crate::encoding::encode_plain;
use crate::record::{event_batch, events_behind, stored_already};
use crate::StoreError;
use agentd_domain::{Event, RunEventKind, RunId, RunRecord, RunStatus, Timestamp};

/// NOTIFY payloads must stay under 8000 bytes; events that would not fit
/// are left out, and listeners read them from the store instead.
const MAX_PAYLOAD: usize = 7900;

/// The parameters of one write's event row: its first and last seq and
/// the encoded events, all NULL when the write stores none.
pub(super) struct EventRow {
    pub(super) first_seq: Option<i64>,
    pub(super) last_seq: Option<i64>,
    pub(super) events: Option<Vec<u8>>,
}

pub(super) fn event_row(events: &[Event]) -> Result<EventRow, StoreError> {
    let batch = event_batch(events)?;
    Ok(EventRow {
        first_seq: batch.as_ref().map(|b| b.first_seq),
        last_seq: batch.as_ref().map(|b| b.last_seq),
        events: batch.map(|b| b.events),
    })
}

impl EventRow {
    /// Refuses a run row stored behind its own events (see
    /// [`events_behind`]).
    pub(super) fn behind(&self, run_last_seq: u64) -> Option<StoreError> {
        events_behind(self.last_seq?, to_i64(run_last_seq))
    }
}

/// The notification of a write: who wrote, and what changed (a
/// [`crate::FeedMessage`], or [`Changed`] spelling one).
#[derive(serde::Serialize)]
pub(super) struct Notice<'a, M> {
    pub origin: &'a str,
    pub message: M,
}

/// [`crate::FeedMessage::Changed`] as it is serialised, borrowing the write's
/// events rather than copying them.
#[derive(serde::Serialize)]
#[serde(tag = "kind", rename = "changed")]
struct Changed<'a> {
    run_id: RunId,
    status: RunStatus,
    last_seq: u64,
    events: Option<&'a [Event]>,
}

/// What a write tells the other servers when any listens: `run_id` is now
/// at `last_seq` in `status`, after `events`.
pub(super) struct Announcement<'a> {
    run_id: RunId,
    status: RunStatus,
    last_seq: u64,
    events: &'a [Event],
}

impl Announcement<'_> {
    /// The notification's payload, with the events inline when they fit.
    fn payload(&self, origin: &str) -> Result<String, StoreError> {
        let encode = |events: Option<&[Event]>| {
            serde_json::to_string(&Notice {
                origin,
                message: Changed {
                    run_id: self.run_id,
                    status: self.status,
                    last_seq: self.last_seq,
                    events,
                },
            })
            .map_err(corrupt)
        };
        let full = encode(Some(self.events))?;
        if full.len() <= MAX_PAYLOAD {
            return Ok(full);
        }
        encode(None)
    }
}

pub(super) const INSERT_EVENTS: &str = "INSERT INTO event_batches (run_id, last_seq, first_seq, events) \
     SELECT $1::uuid, $3::bigint, $2::bigint, $4::bytea \
     WHERE $4::bytea IS NOT NULL AND EXISTS (SELECT 1 FROM changed)";

/// Whether a server other than the one whose origin is the parameter that
/// follows (its number completes this) listens for writes: the third
/// column of the writes that announce themselves (see
/// `migrations/postgres/0010_listeners.sql` for why a registration is
/// never missed).
const LISTENED_ELSEWHERE: &str = "EXISTS (SELECT 1 FROM listeners WHERE origin <> $";

/// A write statement answers with two counts: run rows it changed (0 or
/// 1), and run events it stored; those that announce themselves,
/// then with whether anyone else listens.
///
/// The run's status before the update comes from the statement's snapshot:
/// if the compare-and-set on the version changes the row, that is the
/// status of the version the write was made from. The compare-and-set also
/// guards the events: they must come after the run's stored `last_seq`,
/// which every write that stores events moves to their last (the events'
/// key is a batch's last seq, so it would not catch a repeated seq).
fn commit_sql() -> String {
    format!(
        "WITH changed AS (UPDATE runs SET status = $5, version = $6, last_seq = $7, \
         updated_at = $8, wakes_at = $22, lease_owner = $10, lease_expires_at = $11, record = $12 \
         WHERE id = $1 AND version = $13 AND ($2::bigint IS NULL OR last_seq < $2::bigint) RETURNING id), \
         inserted AS ({INSERT_EVENTS}), \
         run_event AS ({run_events}) \
         SELECT (SELECT count(*) FROM changed), (SELECT count(*) FROM run_event), {LISTENED_ELSEWHERE}19)",
        run_events = insert_run_events(&RunEventParams {
            tenant: 15,
            agent_id: 16,
            thread_id: 17,
            time: 23,
            pending: 18,
            expires_at: 9,
            kinds: 14,
            statuses: 20,
            decisions: 21,
        })
    )
}

/// The parameters, by number, of the run events a write statement inserts
/// (see [`insert_run_events`]).
pub(super) struct RunEventParams {
    pub tenant: u8,
    pub agent_id: u8,
    pub thread_id: u8,
    pub time: u8,
    /// A suspension's pending calls and expiry.
    pub pending: u8,
    pub expires_at: u8,
    /// The kinds, and the statuses they leave the run in: two text arrays
    /// (see [`run_event_params`]).
    pub kinds: u8,
    pub statuses: u8,
    /// The decisions the write's changes were made of, for the kinds that
    /// carry them (see `RunEventKind::carries_decisions`).
    pub decisions: u8,
}

/// The run events of a write that changed its run (`changed`): one row per
/// kind, in order, a suspension's with what it waits on and until when.
pub(super) fn insert_run_events(p: &RunEventParams) -> String {
    format!(
        "INSERT INTO run_events (tenant, run_id, agent_id, thread_id, kind, status, time, pending, expires_at, \
         decisions) \
         SELECT ${}, $1, ${}, ${}, k.kind, k.status, ${}, \
         CASE WHEN k.kind IN ('suspended', 'reminded') THEN ${}::bytea END, \
         CASE WHEN k.kind IN ('suspended', 'reminded') THEN ${}::bigint END, \
         CASE WHEN k.kind IN ('resumed', 'cancelled', 'expired') THEN ${}::bytea END \
         FROM unnest(${}::text[], ${}::text[]) WITH ORDINALITY AS k(kind, status, n) \
         WHERE EXISTS (SELECT 1 FROM changed) ORDER BY k.n RETURNING 1",
        p.tenant, p.agent_id, p.thread_id, p.time, p.pending, p.expires_at, p.decisions, p.kinds, p.statuses
    )
}

/// The kinds of `run_events` and the statuses they leave a run in, as the
/// two arrays [`INSERT_RUN_EVENTS`] takes.
pub(super) fn run_event_params(run_events: &[RunEventKind]) -> (Vec<&'static str>, Vec<&'static str>) {
    run_events
        .iter()
        .map(|kind| (kind.as_str(), kind.status().as_str()))
        .unzip()
}

fn append_sql() -> String {
    format!(
        "WITH changed AS (UPDATE runs SET version = version + 1, \
         last_seq = coalesce($5, last_seq), lease_expires_at = coalesce($6, lease_expires_at) \
         WHERE id = $1 AND version = $7 AND ($2::bigint IS NULL OR last_seq < $2::bigint) RETURNING id), \
         inserted AS ({INSERT_EVENTS}) \
         SELECT count(*), 0::bigint, {LISTENED_ELSEWHERE}8) FROM changed"
    )
}

/// Runs one write statement, then (if it changed the run row and another
/// server listens) tells them of it; whether it changed the row. The
/// statement of a write with an announcement answers whether another server
/// listens as its third column.
pub(super) async fn execute(
    store: &PostgresStore,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
    announcement: Option<Announcement<'_>>,
) -> Result<bool, StoreError> {
    let client = store.client().await?;
    let statement = client.prepare_cached(sql).await.map_err(backend)?;
    let row = client.query_one(&statement, params).await.map_err(backend)?;
    let changed = row.get::<_, i64>(0) == 1;
    if row.get::<_, i64>(1) > 0 {
        store.run_event_stored();
    }
    // Nobody else listening: nobody to tell.
    if let Some(announcement) = announcement.filter(|_| changed && row.get::<_, bool>(2)) {
        // The write stands; followers find it in the store all the same.
        if let Err(error) = notify(store, &client, &announcement).await {
            tracing::warn!(%error, "could not notify the other replicas of a write");
        }
    }
    Ok(changed)
}

/// Sends `announcement` on the schema's channel.
async fn notify(
    store: &PostgresStore,
    client: &deadpool_postgres::Object,
    announcement: &Announcement<'_>,
) -> Result<(), StoreError> {
    let notice = announcement.payload(&store.origin)?;
    let notify = client
        .prepare_cached("SELECT pg_notify($1, $2)")
        .await
        .map_err(backend)?;
    client
        .execute(&notify, &[&store.channel, &notice])
        .await
        .map_err(backend)?;
    Ok(())
}

/// Why a compare-and-set changed nothing: no such run, another version,
/// or the write's first seq is stored already.
async fn refusal(store: &PostgresStore, id: RunId, expected: u64, first_seq: Option<i64>) -> StoreError {
    let client = match store.client().await {
        Ok(client) => client,
        Err(error) => return error,
    };
    let row = match client
        .query_opt("SELECT version, last_seq FROM runs WHERE id = $1", &[&id.0])
        .await
    {
        Ok(row) => row,
        Err(error) => return backend(error),
    };
    let Some(row) = row else {
        return StoreError::NotFound;
    };
    let (actual, stored): (i64, i64) = (row.get(0), row.get(1));
    let actual = u64::try_from(actual).unwrap_or(0);
    match first_seq {
        _ if actual != expected => StoreError::VersionConflict { expected, actual },
        Some(first) if first <= stored => stored_already(first, stored),
        _ => StoreError::Backend(format!("run {id} changed no row")),
    }
}

pub(super) async fn commit(
    store: &PostgresStore,
    run: &RunRecord,
    expected_version: u64,
    events: &[Event],
    run_events: &[RunEventKind],
) -> Result<(), StoreError> {
    let batch = event_row(events)?;
    if let Some(error) = batch.behind(run.last_seq()) {
        // A wrong version (or no such run) is reported first.
        return Err(match refusal(store, run.id, expected_version, None).await {
            refused @ (StoreError::NotFound | StoreError::VersionConflict { .. }) => refused,
            _ => error,
        });
    }
    let record = crate::record::encode_run_plain(run)?;
    let lease_owner = run.lease().as_ref().map(|lease| lease.owner.as_str());
    let lease_expires_at = run.lease().as_ref().map(|lease| lease.expires_at.0);
    let announcement = Announcement {
        run_id: run.id,
        status: run.status(),
        last_seq: run.last_seq(),
        events,
    };
    let (kinds, statuses) = run_event_params(run_events);
    let thread_id = run.thread.as_ref().map(|link| link.id.as_str());
    let pending = suspension_pending(run)?;
    let decisions = crate::record::event_decisions(run, true)?;
    let wakes_at = run.wakes_at().map(|at| at.0);
    let time = crate::record::run_event_time(run, run_events).0;
    let params: [&(dyn ToSql + Sync); 23] = [
        &run.id.0,
        &batch.first_seq,
        &batch.last_seq,
        &batch.events,
        &run.status().as_str(),
        &to_i64(run.version()),
        &to_i64(run.last_seq()),
        &run.updated_at.0,
        &run.expires_at().map(|at| at.0),
        &lease_owner,
        &lease_expires_at,
        &record,
        &to_i64(expected_version),
        &kinds,
        &run.tenant.as_str(),
        &run.agent_id,
        &thread_id,
        &pending,
        &store.origin,
        &statuses,
        &decisions,
        &wakes_at,
        &time,
    ];
    if execute(store, &commit_sql(), &params, Some(announcement)).await? {
        Ok(())
    } else {
        Err(refusal(store, run.id, expected_version, batch.first_seq).await)
    }
}

/// What a suspended run waits on, for the event of its suspension.
pub(super) fn suspension_pending(run: &RunRecord) -> Result<Option<Vec<u8>>, StoreError> {
    match run.status() {
        RunStatus::Suspended => Ok(Some(encode_plain(&run.pending())?)),
        _ => Ok(None),
    }
}

pub(super) async fn append(
    store: &PostgresStore,
    id: RunId,
    expected_version: u64,
    lease_expires_at: Option<Timestamp>,
    events: &[Event],
) -> Result<(), StoreError> {
    let batch = event_row(events)?;
    let last_seq = events.last().map(|event| event.seq);
    // A renewal alone (no events) tells nobody anything.
    let announcement = last_seq.map(|last_seq| Announcement {
        run_id: id,
        status: RunStatus::Running,
        last_seq,
        events,
    });
    let params: [&(dyn ToSql + Sync); 8] = [
        &id.0,
        &batch.first_seq,
        &batch.last_seq,
        &batch.events,
        &last_seq.map(to_i64),
        &lease_expires_at.map(|at| at.0),
        &to_i64(expected_version),
        &store.origin,
    ];
    if execute(store, &append_sql(), &params, announcement).await? {
        Ok(())
    } else {
        Err(refusal(store, id, expected_version, batch.first_seq).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FeedMessage;
    use agentd_domain::Chunk;

    #[test]
    fn a_borrowed_change_serialises_as_the_feed_message() {
        let events = vec![Event {
            seq: 7,
            time: Timestamp(42),
            chunk: Chunk::StepStart { step: 2 },
        }];
        for events in [Some(events.as_slice()), None] {
            let (run_id, status, last_seq) = (RunId::new(), RunStatus::Running, 7);
            let borrowed = Changed {
                run_id,
                status,
                last_seq,
                events,
            };
            let owned = FeedMessage::Changed {
                run_id,
                status,
                last_seq,
                events: events.map(<[Event]>::to_vec),
            };
            assert_eq!(
                serde_json::to_value(&borrowed).unwrap(),
                serde_json::to_value(&owned).unwrap()
            );
        }
    }
}
