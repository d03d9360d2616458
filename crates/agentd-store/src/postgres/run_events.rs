//! The PostgreSQL store's run events (see `RunEventLog::read_run_events` and
//! migration 0005): read in (txid, id) order, and only those of
//! transactions older than the read's snapshot xmin, which have all
//! finished, so that no event can still commit before one a reader has
//! seen. A write's event is stored by its own statement (`write.rs`).

use tokio_postgres::Row;
use uuid::Uuid;

use super::read::{query, Client};
use super::{backend, to_i64};
use crate::record::RunEventRow;
use crate::{RunEventPage, StoreError};
use agentd_domain::{EventPosition, RunEvent, RunId, Tenant};

/// The snapshot's xmin, as the bigint that `txid` holds.
const XMIN: &str = "pg_snapshot_xmin(pg_current_snapshot())::text::bigint";

pub(super) async fn read(
    client: &Client,
    tenant: Option<&Tenant>,
    after: EventPosition,
    limit: usize,
) -> Result<RunEventPage, StoreError> {
    let columns = format!("{COLUMNS}, {XMIN}");
    let limit = to_i64(limit as u64);
    let rows = match tenant {
        Some(tenant) => {
            let sql = format!(
                "SELECT {columns} FROM run_events WHERE tenant = $1 AND (txid, id) > ($2, $3) \
                 ORDER BY txid, id LIMIT $4"
            );
            query(
                client,
                &sql,
                &[&tenant.as_str(), &after.major, &after.minor, &limit],
            )
            .await?
        }
        None => {
            let sql = format!(
                "SELECT {columns} FROM run_events WHERE (txid, id) > ($1, $2) ORDER BY txid, id LIMIT $3"
            );
            query(client, &sql, &[&after.major, &after.minor, &limit]).await?
        }
    };
    let mut page = RunEventPage::default();
    for row in &rows {
        let txid: i64 = row.try_get(0).map_err(backend)?;
        let xmin: i64 = row.try_get(12).map_err(backend)?;
        if txid >= xmin {
            // Its transaction may have committed while an older one still
            // runs, whose event would come before it.
            page.settling = true;
            break;
        }
        page.events.push(event(row, 0)?);
    }
    Ok(page)
}

/// Just before the events of the transactions still running: every event
/// read from now on comes after it, and every event read so far is at or
/// before it.
pub(super) async fn head(client: &Client) -> Result<EventPosition, StoreError> {
    let rows = query(client, &format!("SELECT {XMIN}"), &[]).await?;
    let xmin: i64 = rows
        .first()
        .ok_or_else(|| StoreError::Backend("no snapshot".into()))?
        .try_get(0)
        .map_err(backend)?;
    Ok(EventPosition {
        major: xmin - 1,
        minor: i64::MAX,
    })
}

/// The columns of an event, in the order [`event`] reads them.
pub(super) const COLUMNS: &str =
    "txid, id, tenant, run_id, agent_id, thread_id, kind, status, time, pending, expires_at, decisions";

/// The event in the columns of a row that selected [`COLUMNS`] from
/// column `first` on.
pub(super) fn event(row: &Row, first: usize) -> Result<RunEvent, StoreError> {
    let column = |index: usize| first + index;
    RunEventRow {
        position: EventPosition {
            major: row.try_get(column(0)).map_err(backend)?,
            minor: row.try_get(column(1)).map_err(backend)?,
        },
        tenant: row.try_get(column(2)).map_err(backend)?,
        run_id: RunId(row.try_get::<_, Uuid>(column(3)).map_err(backend)?),
        agent_id: row.try_get(column(4)).map_err(backend)?,
        thread_id: row.try_get(column(5)).map_err(backend)?,
        kind: row.try_get(column(6)).map_err(backend)?,
        status: row.try_get(column(7)).map_err(backend)?,
        time: row.try_get(column(8)).map_err(backend)?,
        pending: row.try_get(column(9)).map_err(backend)?,
        expires_at: row.try_get(column(10)).map_err(backend)?,
        decisions: row.try_get(column(11)).map_err(backend)?,
    }
    .into_event()
}
