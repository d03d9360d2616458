//! The ceiling service's store, one durable write per RPC.
//!
//! - SQLite: one small row per RPC into a database in WAL mode, written by
//!   a single writer thread that commits every write waiting in one
//!   transaction (group commit, as agentd's store does), or each write in
//!   its own transaction when asked to be naive.
//! - PostgreSQL: one prepared `INSERT` of the run per StreamAgent and one
//!   compare-and-swap `UPDATE` of its version per Resume, each its own
//!   transaction, through a pool of agentd's store's size, with the
//!   database's `synchronous_commit` as agentd's store commits with.

use std::path::Path;
use std::str::FromStr;

use anyhow::{bail, Context};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use rusqlite::{params, Connection};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::NoTls;

use crate::bench::args::SyncMode;

/// The most writes committed in one transaction (agentd's store uses the same).
const MAX_BATCH: usize = 512;

struct Write {
    run_id: String,
    kind: i64,
    body: Vec<u8>,
    done: oneshot::Sender<Result<(), String>>,
}

/// What a write records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteKind {
    /// A run is created.
    Start = 1,
    /// A run moves from its first version to its second.
    Resume = 2,
}

#[derive(Clone)]
pub(super) enum CeilingStore {
    Sqlite(SqliteCeiling),
    Postgres(PostgresCeiling),
}

impl CeilingStore {
    pub(super) async fn write(&self, run_id: &str, kind: WriteKind, body: Vec<u8>) -> Result<(), String> {
        match self {
            Self::Sqlite(store) => store.write(run_id, kind, body).await,
            Self::Postgres(store) => store.write(run_id, kind, body).await,
        }
    }
}

#[derive(Clone)]
pub(super) struct SqliteCeiling {
    writes: mpsc::UnboundedSender<Write>,
}

impl SqliteCeiling {
    pub(super) fn open(path: &Path, sync: SyncMode, naive: bool) -> anyhow::Result<Self> {
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", sync.as_str())?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS writes (\
               run_id TEXT NOT NULL, kind INTEGER NOT NULL, time INTEGER NOT NULL, body BLOB NOT NULL)",
        )?;
        let (writes, queue) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("ceiling-writer".into())
            .spawn(move || write_loop(conn, queue, naive))
            .context("starting the writer thread")?;
        Ok(Self { writes })
    }

    /// Stores one row and waits until it is committed.
    async fn write(&self, run_id: &str, kind: WriteKind, body: Vec<u8>) -> Result<(), String> {
        let (done, committed) = oneshot::channel();
        let write = Write {
            run_id: run_id.to_owned(),
            kind: kind as i64,
            body,
            done,
        };
        self.writes
            .send(write)
            .map_err(|_| "the writer thread has stopped".to_owned())?;
        committed
            .await
            .map_err(|_| "the writer thread has stopped".to_owned())?
    }
}

fn write_loop(mut conn: Connection, mut queue: mpsc::UnboundedReceiver<Write>, naive: bool) {
    let limit = if naive { 1 } else { MAX_BATCH };
    let mut batch = Vec::with_capacity(limit);
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < limit {
            match queue.try_recv() {
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        let outcome = commit(&mut conn, &batch).map_err(|e| e.to_string());
        for write in batch.drain(..) {
            let _ = write.done.send(outcome.clone());
        }
    }
}

fn commit(conn: &mut Connection, batch: &[Write]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut insert =
            tx.prepare_cached("INSERT INTO writes (run_id, kind, time, body) VALUES (?1, ?2, ?3, ?4)")?;
        let now = crate::domain::Timestamp::now().0;
        for write in batch {
            insert.execute(params![write.run_id, write.kind, now, write.body])?;
        }
    }
    tx.commit()
}

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS ceiling_runs (\
    id text PRIMARY KEY, version bigint NOT NULL, updated_at bigint NOT NULL, body bytea NOT NULL)";
const INSERT: &str = "INSERT INTO ceiling_runs (id, version, updated_at, body) VALUES ($1, 1, $2, $3)";
const UPDATE: &str =
    "UPDATE ceiling_runs SET version = 2, updated_at = $2, body = $3 WHERE id = $1 AND version = 1";

#[derive(Clone)]
pub(super) struct PostgresCeiling {
    pool: Pool,
}

impl PostgresCeiling {
    /// Connects to `url` (whose search path selects the schema) and creates
    /// the table.
    pub(super) async fn open(url: &str) -> anyhow::Result<Self> {
        let config = tokio_postgres::Config::from_str(url).context("invalid PostgreSQL URL")?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(crate::store::POSTGRES_POOL_SIZE)
            .build()
            .context("building the connection pool")?;
        let client = pool.get().await.context("connecting to PostgreSQL")?;
        client
            .batch_execute(CREATE_TABLE)
            .await
            .context("creating the table")?;
        Ok(Self { pool })
    }

    async fn write(&self, run_id: &str, kind: WriteKind, body: Vec<u8>) -> Result<(), String> {
        let written = async {
            let client = self.pool.get().await.map_err(|e| e.to_string())?;
            let sql = match kind {
                WriteKind::Start => INSERT,
                WriteKind::Resume => UPDATE,
            };
            let statement = client.prepare_cached(sql).await.map_err(|e| e.to_string())?;
            let now = crate::domain::Timestamp::now().0;
            client
                .execute(&statement, &[&run_id, &now, &body])
                .await
                .map_err(|e| e.to_string())
        };
        match written.await? {
            1 => Ok(()),
            _ => Err(format!("run {run_id} was not at version 1")),
        }
    }
}

/// Opens the store `store` names (`postgres://...`), or SQLite in `data_dir`.
pub(super) async fn open(
    data_dir: &Path,
    store: Option<&str>,
    sync: SyncMode,
    naive: bool,
) -> anyhow::Result<CeilingStore> {
    match store {
        None => Ok(CeilingStore::Sqlite(SqliteCeiling::open(
            &data_dir.join("ceiling.sqlite3"),
            sync,
            naive,
        )?)),
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            Ok(CeilingStore::Postgres(PostgresCeiling::open(url).await?))
        }
        Some(other) => bail!("the ceiling stores in SQLite or PostgreSQL, not {other:?}"),
    }
}
