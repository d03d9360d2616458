//! The PostgreSQL store's versioned migrations, applied when a server opens
//! the store. Several replicas may start at once: each takes a session
//! advisory lock (one per schema) before it reads `schema_migrations`, so
//! exactly one applies what is pending and the others find it done. Each
//! migration runs in its own transaction with its row in
//! `schema_migrations`.

use tokio_postgres::{Client, NoTls};

use super::{backend, connect_error};
use crate::store::StoreError;

/// Schema migrations, in order; their number is their version.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/postgres/0001_runs.sql"),
    include_str!("../migrations/postgres/0002_tenants.sql"),
    include_str!("../migrations/postgres/0003_threads.sql"),
    include_str!("../migrations/postgres/0004_health_probe.sql"),
    include_str!("../migrations/postgres/0005_run_events.sql"),
    include_str!("../migrations/postgres/0006_webhook_deliveries.sql"),
    include_str!("../migrations/postgres/0007_replicas.sql"),
];

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
        tx.execute("INSERT INTO schema_migrations (version) VALUES ($1)", &[&version])
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        tracing::info!(version, "applied PostgreSQL migration");
    }
    Ok(())
}
