//! The SQLite store's webhook delivery ledger (migration 0010, see
//! `store/deliveries.rs`): the writes the writer thread applies in its
//! batches, each refused by its first statement or not at all like every
//! other write (a cursor that moved changes nothing), and the count of
//! pending deliveries for the metrics. One process owns the file, so a
//! claim needs no row locks: the writer applies one write at a time.

use std::collections::BTreeMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::apply::{Applied, Reply};
use super::{backend, push_configs, run_events};
use crate::{
    AttemptOutcome, ClaimedDelivery, DeliveryClaim, DeliveryId, NewDelivery, PushConfig, StoreError,
};
use agentd_domain::{EventPosition, RunId, Timestamp};

/// A ledger write, as the writer thread applies it.
pub(in crate::sqlite) enum LedgerWrite {
    Cursor {
        webhook: String,
        start: EventPosition,
    },
    Enqueue {
        webhook: String,
        from: EventPosition,
        to: EventPosition,
        deliveries: Vec<NewDelivery>,
        now: Timestamp,
    },
    Claim {
        webhook: String,
        owner: String,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    },
    Finish {
        id: DeliveryId,
        attempt: u32,
        outcome: AttemptOutcome,
        now: Timestamp,
    },
    /// An A2A push notification configuration stored (`push_configs.rs`).
    PutPushConfig(PushConfig),
    DeletePushConfig {
        run_id: RunId,
        id: String,
    },
    /// A grant stored (`grants.rs`).
    PutGrant(agentd_domain::Grant),
    DeleteGrant {
        tenant: String,
        id: String,
    },
}

/// Applies one ledger write inside the writer's transaction.
pub(super) fn apply(conn: &Connection, write: &LedgerWrite) -> Applied {
    let reply = match write {
        // An insert that may change nothing, then a read: a failure after
        // the insert is the engine's.
        LedgerWrite::Cursor { webhook, start } => {
            return match cursor(conn, webhook, *start) {
                Ok(position) => Applied::Whole {
                    run_event: false,
                    reply: Reply::Cursor(position),
                },
                Err(error) => Applied::Broken(error),
            }
        }
        LedgerWrite::Enqueue {
            webhook,
            from,
            to,
            deliveries,
            now,
        } => return enqueue(conn, webhook, (*from, *to), deliveries, *now),
        LedgerWrite::Claim {
            webhook,
            owner,
            now,
            lease_until,
            limit,
        } => return claim(conn, webhook, owner, (*now, *lease_until), *limit),
        LedgerWrite::Finish {
            id,
            attempt,
            outcome,
            now,
        } => finish(conn, *id, *attempt, outcome, *now).map(Reply::Changed),
        LedgerWrite::PutPushConfig(config) => push_configs::put(conn, config).map(|()| Reply::Done),
        LedgerWrite::DeletePushConfig { run_id, id } => {
            push_configs::delete(conn, *run_id, id).map(Reply::Changed)
        }
        LedgerWrite::PutGrant(grant) => super::grants::put(conn, grant).map(|()| Reply::Done),
        LedgerWrite::DeleteGrant { tenant, id } => {
            super::grants::delete(conn, tenant, id).map(Reply::Changed)
        }
    };
    match reply {
        // A single statement: refused whole if it fails.
        Ok(reply) => Applied::Whole {
            run_event: false,
            reply,
        },
        Err(error) => Applied::Refused(error),
    }
}

fn cursor(conn: &Connection, webhook: &str, start: EventPosition) -> Result<EventPosition, StoreError> {
    conn.prepare_cached(
        "INSERT INTO ledger_cursors (webhook, major, minor) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
    )
    .and_then(|mut insert| insert.execute(params![webhook, start.major, start.minor]))
    .map_err(backend)?;
    conn.prepare_cached("SELECT major, minor FROM ledger_cursors WHERE webhook = ?1")
        .and_then(|mut select| {
            select.query_row([webhook], |row| {
                Ok(EventPosition {
                    major: row.get(0)?,
                    minor: row.get(1)?,
                })
            })
        })
        .map_err(backend)
}

fn enqueue(
    conn: &Connection,
    webhook: &str,
    (from, to): (EventPosition, EventPosition),
    deliveries: &[NewDelivery],
    now: Timestamp,
) -> Applied {
    let moved = conn
        .prepare_cached(
            "UPDATE ledger_cursors SET major = ?2, minor = ?3 \
             WHERE webhook = ?1 AND major = ?4 AND minor = ?5",
        )
        .and_then(|mut update| update.execute(params![webhook, to.major, to.minor, from.major, from.minor]))
        .map_err(backend);
    match moved {
        Ok(1) => {}
        Ok(_) => {
            return Applied::Whole {
                run_event: false,
                reply: Reply::Changed(false),
            }
        }
        Err(error) => return Applied::Refused(error),
    }
    let mut insert = match conn
        .prepare_cached(
            "INSERT INTO webhook_deliveries (webhook, run_id, event_major, event_minor, enqueued_at, \
             next_attempt_at, target) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
        )
        .map_err(backend)
    {
        Ok(insert) => insert,
        Err(error) => return Applied::Broken(error),
    };
    for delivery in deliveries {
        let inserted = insert.execute(params![
            webhook,
            delivery.run_id.to_string(),
            delivery.event.major,
            delivery.event.minor,
            now.0,
            delivery.target
        ]);
        if let Err(error) = inserted {
            return Applied::Broken(backend(error));
        }
    }
    Applied::Whole {
        run_event: false,
        reply: Reply::Changed(true),
    }
}

/// Whether no earlier delivery of the same run to the same webhook is
/// pending (`d` is the delivery in question).
const IN_ORDER: &str = "NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.run_id = d.run_id \
     AND e.webhook = d.webhook AND e.target = d.target AND e.state = 'pending' \
     AND (e.event_major, e.event_minor) < (d.event_major, d.event_minor))";

fn claim(
    conn: &Connection,
    webhook: &str,
    owner: &str,
    (now, lease_until): (Timestamp, Timestamp),
    limit: usize,
) -> Applied {
    let sql = format!(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, lease_owner = ?2, lease_expires_at = ?3 \
         WHERE id IN (SELECT d.id FROM webhook_deliveries d WHERE d.webhook = ?1 AND d.state = 'pending' \
         AND d.next_attempt_at <= ?4 AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ?4) \
         AND {IN_ORDER} ORDER BY d.next_attempt_at, d.id LIMIT ?5) \
         RETURNING id, attempts, enqueued_at, event_minor, target"
    );
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let claimed: Result<Vec<Claimed>, StoreError> = conn
        .prepare_cached(&sql)
        .and_then(|mut update| {
            update
                .query_map(params![webhook, owner, lease_until.0, now.0, limit], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
                })?
                .collect()
        })
        .map_err(backend);
    let mut claimed = match claimed {
        Ok(claimed) => claimed,
        Err(error) => return Applied::Refused(error),
    };
    claimed.sort_unstable();
    match claimed_with_events(conn, webhook, claimed) {
        Ok(claim) => Applied::Whole {
            run_event: false,
            reply: Reply::Claimed(claim),
        },
        Err(error) => Applied::Broken(error),
    }
}

/// A claimed delivery's id, attempt, enqueue time, event and target.
type Claimed = (DeliveryId, u32, i64, i64, String);

/// The claimed deliveries with their events, and when the next one is due.
fn claimed_with_events(
    conn: &Connection,
    webhook: &str,
    claimed: Vec<Claimed>,
) -> Result<DeliveryClaim, StoreError> {
    let mut select = conn
        .prepare_cached(&format!(
            "SELECT {} FROM run_events WHERE position = ?1",
            run_events::COLUMNS
        ))
        .map_err(backend)?;
    let mut deliveries = Vec::with_capacity(claimed.len());
    for (id, attempt, enqueued_at, position, target) in claimed {
        let event = select
            .query_row([position], |row| Ok(run_events::event_from_row(row, 0)))
            .optional()
            .map_err(backend)?
            .ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "delivery {id} names run event {position}, which is not stored"
                ))
            })??;
        deliveries.push(ClaimedDelivery {
            id,
            attempt,
            enqueued_at: Timestamp(enqueued_at),
            event,
            target,
        });
    }
    let next_due: Option<i64> = conn
        .prepare_cached(&format!(
            "SELECT min(max(d.next_attempt_at, coalesce(d.lease_expires_at, 0))) FROM webhook_deliveries d \
             WHERE d.webhook = ?1 AND d.state = 'pending' AND {IN_ORDER}"
        ))
        .and_then(|mut select| select.query_row([webhook], |row| row.get(0)))
        .map_err(backend)?;
    Ok(DeliveryClaim {
        deliveries,
        next_due: next_due.map(Timestamp),
    })
}

fn finish(
    conn: &Connection,
    id: DeliveryId,
    attempt: u32,
    outcome: &AttemptOutcome,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let (state, next_attempt_at, error, finished_at) = outcome.columns(now);
    let updated = conn
        .prepare_cached(
            "UPDATE webhook_deliveries SET state = ?3, next_attempt_at = coalesce(?4, next_attempt_at), \
             last_error = ?5, finished_at = ?6, lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = ?1 AND attempts = ?2 AND state = 'pending'",
        )
        .and_then(|mut update| {
            update.execute(params![id, attempt, state, next_attempt_at, error, finished_at])
        })
        .map_err(backend)?;
    Ok(updated == 1)
}

/// Pending deliveries by webhook.
pub(super) fn pending(conn: &Connection) -> Result<BTreeMap<String, u64>, StoreError> {
    let mut select = conn
        .prepare_cached(
            "SELECT webhook, count(*) FROM webhook_deliveries WHERE state = 'pending' GROUP BY webhook",
        )
        .map_err(backend)?;
    let rows = select
        .query_map([], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))
        .map_err(backend)?;
    rows.map(|row| {
        let (webhook, count) = row.map_err(backend)?;
        Ok((webhook, u64::try_from(count).unwrap_or(0)))
    })
    .collect()
}
