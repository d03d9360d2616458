//! The PostgreSQL store's webhook delivery ledger (migration 0006, see
//! `store/deliveries.rs`). Several replicas share it: a webhook's cursor
//! moves by a compare-and-set in the same statement that stores the
//! deliveries it enqueues (so an event is enqueued once, by whichever
//! replica moves the cursor first), and a claim takes its rows
//! `FOR UPDATE SKIP LOCKED` and leases them in the same statement (so each
//! attempt is made by one replica, and concurrent claims never wait for
//! each other).

use std::collections::BTreeMap;

use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::read::{query, Client};
use super::{backend, run_events, to_i64};
use crate::{AttemptOutcome, Claim, ClaimedDelivery, DeliveryClaim, DeliveryId, Enqueue, StoreError};
use agentd_domain::{EventPosition, RunEvent, Timestamp};

pub(super) async fn cursor(
    client: &Client,
    webhook: &str,
    start: EventPosition,
) -> Result<EventPosition, StoreError> {
    // Two statements: the read sees the row a concurrent insert committed.
    query(
        client,
        "INSERT INTO ledger_cursors (webhook, major, minor) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        &[&webhook, &start.major, &start.minor],
    )
    .await?;
    let rows = query(
        client,
        "SELECT major, minor FROM ledger_cursors WHERE webhook = $1",
        &[&webhook],
    )
    .await?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Backend(format!("the cursor of webhook {webhook:?} went")))?;
    Ok(EventPosition {
        major: row.try_get(0).map_err(backend)?,
        minor: row.try_get(1).map_err(backend)?,
    })
}

const ENQUEUE: &str = "WITH moved AS (UPDATE ledger_cursors SET major = $2, minor = $3 \
     WHERE webhook = $1 AND major = $4 AND minor = $5 RETURNING 1), \
     inserted AS (INSERT INTO webhook_deliveries (webhook, run_id, event_major, event_minor, enqueued_at, \
     next_attempt_at, target) SELECT $1, d.run_id, d.major, d.minor, $9, $9, d.target \
     FROM unnest($6::uuid[], $7::bigint[], $8::bigint[], $10::text[]) AS d(run_id, major, minor, target) \
     WHERE EXISTS (SELECT 1 FROM moved)) \
     SELECT count(*) FROM moved";

pub(super) async fn enqueue(
    client: &Client,
    webhook: &str,
    enqueue: &Enqueue<'_>,
) -> Result<bool, StoreError> {
    let (from, to, now) = (enqueue.from, enqueue.to, enqueue.now);
    let deliveries = enqueue.deliveries;
    let run_ids: Vec<Uuid> = deliveries.iter().map(|d| d.run_id.0).collect();
    let majors: Vec<i64> = deliveries.iter().map(|d| d.event.major).collect();
    let minors: Vec<i64> = deliveries.iter().map(|d| d.event.minor).collect();
    let targets: Vec<&str> = deliveries.iter().map(|d| d.target.as_str()).collect();
    let params: [&(dyn ToSql + Sync); 10] = [
        &webhook,
        &to.major,
        &to.minor,
        &from.major,
        &from.minor,
        &run_ids,
        &majors,
        &minors,
        &now.0,
        &targets,
    ];
    let rows = query(client, ENQUEUE, &params).await?;
    let moved: i64 = rows
        .first()
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(backend)?
        .unwrap_or(0);
    Ok(moved == 1)
}

/// Whether no earlier delivery of the same run to the same webhook is
/// pending (`d` is the delivery in question).
const IN_ORDER: &str = "NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.run_id = d.run_id \
     AND e.webhook = d.webhook AND e.target = d.target AND e.state = 'pending' \
     AND (e.event_major, e.event_minor) < (d.event_major, d.event_minor))";

fn claim_sql() -> String {
    format!(
        "WITH due AS (SELECT d.id FROM webhook_deliveries d WHERE d.webhook = $1 AND d.state = 'pending' \
         AND d.next_attempt_at <= $2 AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= $2) \
         AND {IN_ORDER} ORDER BY d.next_attempt_at, d.id LIMIT $3 FOR UPDATE SKIP LOCKED) \
         UPDATE webhook_deliveries w SET attempts = w.attempts + 1, lease_owner = $4, lease_expires_at = $5 \
         FROM due WHERE w.id = due.id \
         RETURNING w.id, w.attempts, w.enqueued_at, w.event_major, w.event_minor, w.target"
    )
}

pub(super) async fn claim(
    client: &Client,
    webhook: &str,
    claim: &Claim<'_>,
) -> Result<DeliveryClaim, StoreError> {
    let (owner, now, lease_until) = (claim.owner, claim.now, claim.lease_until);
    let limit = to_i64(claim.limit as u64);
    let params: [&(dyn ToSql + Sync); 5] = [&webhook, &now.0, &limit, &owner, &lease_until.0];
    let rows = query(client, &claim_sql(), &params).await?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in &rows {
        let attempt: i32 = row.try_get(1).map_err(backend)?;
        claimed.push((
            row.try_get::<_, DeliveryId>(0).map_err(backend)?,
            u32::try_from(attempt).unwrap_or(0),
            Timestamp(row.try_get(2).map_err(backend)?),
            EventPosition {
                major: row.try_get(3).map_err(backend)?,
                minor: row.try_get(4).map_err(backend)?,
            },
            row.try_get::<_, String>(5).map_err(backend)?,
        ));
    }
    claimed.sort_unstable_by_key(|(id, ..)| *id);
    let events = events_at(client, claimed.iter().map(|(.., event, _)| *event)).await?;
    let mut deliveries = Vec::with_capacity(claimed.len());
    for (id, attempt, enqueued_at, position, target) in claimed {
        // Gone with its thread since the claim: so is the delivery.
        let Some(event) = events.get(&position) else {
            continue;
        };
        deliveries.push(ClaimedDelivery {
            id,
            attempt,
            enqueued_at,
            event: event.clone(),
            target,
        });
    }
    let next_due = query(
        client,
        &format!(
            "SELECT min(GREATEST(d.next_attempt_at, coalesce(d.lease_expires_at, 0))) \
             FROM webhook_deliveries d WHERE d.webhook = $1 AND d.state = 'pending' AND {IN_ORDER}"
        ),
        &[&webhook],
    )
    .await?;
    let next_due: Option<i64> = next_due
        .first()
        .map(|row| row.try_get(0))
        .transpose()
        .map_err(backend)?
        .flatten();
    Ok(DeliveryClaim {
        deliveries,
        next_due: next_due.map(Timestamp),
    })
}

/// The run events at `positions`, by position.
async fn events_at(
    client: &Client,
    positions: impl Iterator<Item = EventPosition>,
) -> Result<BTreeMap<EventPosition, RunEvent>, StoreError> {
    let (majors, minors): (Vec<i64>, Vec<i64>) = positions.map(|p| (p.major, p.minor)).unzip();
    if majors.is_empty() {
        return Ok(BTreeMap::new());
    }
    let sql = format!(
        "SELECT {} FROM run_events WHERE (txid, id) IN \
         (SELECT * FROM unnest($1::bigint[], $2::bigint[]))",
        run_events::COLUMNS
    );
    let rows = query(client, &sql, &[&majors, &minors]).await?;
    rows.iter()
        .map(|row| run_events::event(row, 0).map(|event| (event.position, event)))
        .collect()
}

pub(super) async fn finish(
    client: &Client,
    id: DeliveryId,
    attempt: u32,
    outcome: &AttemptOutcome,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let (state, next_attempt_at, error, finished_at) = outcome.columns(now);
    let attempt = i32::try_from(attempt).unwrap_or(i32::MAX);
    let params: [&(dyn ToSql + Sync); 6] = [&id, &attempt, &state, &next_attempt_at, &error, &finished_at];
    let statement = client
        .prepare_cached(
            "UPDATE webhook_deliveries SET state = $3, next_attempt_at = coalesce($4, next_attempt_at), \
             last_error = $5, finished_at = $6, lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND attempts = $2 AND state = 'pending'",
        )
        .await
        .map_err(backend)?;
    let updated = client.execute(&statement, &params).await.map_err(backend)?;
    Ok(updated == 1)
}

pub(super) async fn pending(client: &Client) -> Result<BTreeMap<String, u64>, StoreError> {
    let rows = query(
        client,
        "SELECT webhook, count(*) FROM webhook_deliveries WHERE state = 'pending' GROUP BY webhook",
        &[],
    )
    .await?;
    rows.iter()
        .map(|row| {
            let webhook: String = row.try_get(0).map_err(backend)?;
            let count: i64 = row.try_get(1).map_err(backend)?;
            Ok((webhook, u64::try_from(count).unwrap_or(0)))
        })
        .collect()
}
