//! The PostgreSQL store's versioned migrations, applied when a server opens
//! the store. Several replicas may start at once: each takes a session
//! advisory lock (one per schema) before it reads `schema_migrations`, so
//! exactly one applies what is pending and the others find it done. Each
//! migration runs in its own transaction with its row in
//! `schema_migrations`.

use tokio_postgres::{Client, NoTls, Transaction};

use super::{backend, connect_error};
use crate::{corrupt, StoreError};
use agentd_domain::{Event, Timestamp};

/// Schema migrations, in order; their number is their version.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_runs.sql"),
    include_str!("migrations/0002_tenants.sql"),
    include_str!("migrations/0003_threads.sql"),
    include_str!("migrations/0004_health_probe.sql"),
    include_str!("migrations/0005_run_events.sql"),
    include_str!("migrations/0006_webhook_deliveries.sql"),
    include_str!("migrations/0007_event_batches.sql"),
    include_str!("migrations/0008_live_run_indexes.sql"),
    include_str!("migrations/0009_replicas.sql"),
    include_str!("migrations/0010_listeners.sql"),
    include_str!("migrations/0011_run_events_unindexed_by_run.sql"),
    include_str!("migrations/0012_a2a_push_configs.sql"),
    include_str!("migrations/0013_run_event_decisions.sql"),
    include_str!("migrations/0014_grants.sql"),
    include_str!("migrations/0015_wake_times.sql"),
];

/// The migration that stores a write's events as one row.
const EVENT_BATCHES: usize = 7;

/// Rows of `events` moved per round trip by [`move_single_events`].
const MOVE_PAGE: i32 = 1000;

/// The advisory lock that serialises migrations of one schema.
const LOCK: &str = "SELECT pg_advisory_lock(hashtext('agentd.migrations.' || current_schema()))";
const UNLOCK: &str = "SELECT pg_advisory_unlock(hashtext('agentd.migrations.' || current_schema()))";

/// Applies pending migrations on a connection of its own and returns the
/// schema they apply to (the first of the connection's `search_path`).
/// Runs on a thread of its own with its own small runtime, so that opening
/// a store never depends on the caller's runtime flavour.
pub(super) fn run(config: &tokio_postgres::Config) -> Result<String, StoreError> {
    let config = config.clone();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| StoreError::Backend(format!("starting the migration runtime: {e}")))?;
                runtime.block_on(migrate(&config))
            })
            .join()
            .unwrap_or_else(|_| Err(StoreError::Backend("the migration thread panicked".into())))
    })
}

async fn migrate(config: &tokio_postgres::Config) -> Result<String, StoreError> {
    let (mut client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|error| connect_error(config, error))?;
    let driver = tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(%error, "migration connection failed");
        }
    });
    let schema: Option<String> = client
        .query_one("SELECT current_schema()", &[])
        .await
        .map_err(backend)?
        .get(0);
    let schema = schema.ok_or_else(|| {
        StoreError::Backend("no schema of the connection's search_path exists to migrate".into())
    })?;
    client.batch_execute(LOCK).await.map_err(backend)?;
    let applied = apply_pending(&mut client).await;
    // Unlocked whatever happened; closing the connection would unlock too.
    let unlocked = client.batch_execute(UNLOCK).await.map_err(backend);
    drop(client);
    let _ = driver.await;
    applied?;
    unlocked?;
    Ok(schema)
}

async fn apply_pending(client: &mut Client) -> Result<(), StoreError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (\
             version bigint PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await
        .map_err(backend)?;
    let applied: i64 = client
        .query_one("SELECT coalesce(max(version), 0) FROM schema_migrations", &[])
        .await
        .map_err(backend)?
        .get(0);
    let applied = usize::try_from(applied).unwrap_or(usize::MAX);
    if applied > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "the database has schema version {applied}, newer than this agentd knows ({})",
            MIGRATIONS.len()
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
        let version = index as i64 + 1;
        let tx = client.transaction().await.map_err(backend)?;
        tx.batch_execute(sql).await.map_err(backend)?;
        if version == EVENT_BATCHES as i64 {
            move_single_events(&tx).await?;
        }
        tx.execute("INSERT INTO schema_migrations (version) VALUES ($1)", &[&version])
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        tracing::info!(version, "applied PostgreSQL migration");
    }
    Ok(())
}

/// Moves the chunks stored one row each in `events` into `event_batches`
/// (a batch of one each, as each was a write's row of its own), a page
/// at a time through a portal, then drops `events`; part of migration
/// 0007's transaction. Chunks an earlier build compressed read back as
/// any stored value does.
async fn move_single_events(tx: &Transaction<'_>) -> Result<(), StoreError> {
    let select = tx
        .prepare("SELECT run_id, seq, time, chunk FROM events")
        .await
        .map_err(backend)?;
    let insert = tx
        .prepare(
            "INSERT INTO event_batches (run_id, last_seq, first_seq, events) \
             SELECT * FROM unnest($1::uuid[], $2::bigint[], $2::bigint[], $3::bytea[])",
        )
        .await
        .map_err(backend)?;
    let portal = tx.bind(&select, &[]).await.map_err(backend)?;
    let mut moved = 0_u64;
    loop {
        let rows = tx.query_portal(&portal, MOVE_PAGE).await.map_err(backend)?;
        if rows.is_empty() {
            break;
        }
        let (mut runs, mut seqs, mut batches) = (Vec::new(), Vec::new(), Vec::new());
        for row in &rows {
            let seq: i64 = row.try_get(1).map_err(backend)?;
            let chunk: Vec<u8> = row.try_get(3).map_err(backend)?;
            let event = Event {
                seq: u64::try_from(seq).map_err(corrupt)?,
                time: Timestamp(row.try_get(2).map_err(backend)?),
                chunk: crate::encoding::decode(&chunk)?,
            };
            runs.push(row.try_get::<_, uuid::Uuid>(0).map_err(backend)?);
            seqs.push(seq);
            batches.push(crate::encoding::encode(&[event])?);
        }
        tx.execute(&insert, &[&runs, &seqs, &batches])
            .await
            .map_err(backend)?;
        moved += rows.len() as u64;
    }
    // The portal and its statement are closed before the table goes.
    drop(portal);
    drop(select);
    tx.batch_execute("DROP TABLE events").await.map_err(backend)?;
    tracing::info!(moved, "stored each write's events as one row");
    Ok(())
}
