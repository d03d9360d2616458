//! The SQLite run store, the embedded default. One writer thread owns the
//! write connection and commits whatever writes are waiting together (group
//! commit: one fsync for many runs), each write inside its own savepoint so
//! that one write's conflict never undoes another's. Reads use a small pool
//! of connections on the blocking thread pool; WAL lets them run beside the
//! writer. Never blocks an async worker thread on SQLite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction};
use tokio::sync::{mpsc, oneshot};

mod leases;
mod queries;
mod threads;

use super::{RunQuery, RunStore, StoreError};
use crate::chunk::Event;
use crate::run::{RunId, RunRecord, RunStatus};
use crate::tenant::Tenant;
use crate::thread::{ThreadId, ThreadQuery, ThreadRecord};
use crate::time::Timestamp;

/// Schema migrations, applied in order on open; `PRAGMA user_version`
/// records how many have run.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/sqlite/0001_runs.sql"),
    include_str!("migrations/sqlite/0002_run_queries.sql"),
    include_str!("migrations/sqlite/0003_leases.sql"),
    include_str!("migrations/sqlite/0004_tenants.sql"),
    include_str!("migrations/sqlite/0005_threads.sql"),
];

/// The most writes committed in one transaction.
const MAX_BATCH: usize = 512;

pub struct SqliteStore {
    writes: mpsc::UnboundedSender<Write>,
    readers: Arc<ReaderPool>,
}

/// A run row, serialised on the caller's task so the writer only does SQL.
struct RunRow {
    id: String,
    tenant: String,
    agent_id: String,
    status: &'static str,
    version: i64,
    last_seq: i64,
    created_at: i64,
    updated_at: i64,
    expires_at: Option<i64>,
    request_id: Option<String>,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    /// The run's thread, and the latest run it must follow there.
    thread: Option<threads::ThreadLinkRow>,
    record: Vec<u8>,
}

struct EventRow {
    seq: i64,
    time: i64,
    chunk: Vec<u8>,
}

enum WriteKind {
    Create(RunRow),
    Commit {
        run: RunRow,
        expected_version: i64,
    },
    Append {
        id: String,
        expected_version: i64,
        last_seq: Option<i64>,
        lease_expires_at: Option<i64>,
    },
    DeleteThread {
        tenant: String,
        thread_id: String,
    },
}

struct Write {
    kind: WriteKind,
    events: Vec<EventRow>,
    done: oneshot::Sender<Result<(), StoreError>>,
}

fn backend(error: rusqlite::Error) -> StoreError {
    StoreError::Backend(error.to_string())
}

fn corrupt(error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(error.to_string())
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl RunRow {
    fn new(run: &RunRecord) -> Result<Self, StoreError> {
        Ok(Self {
            id: run.id.to_string(),
            tenant: run.tenant.to_string(),
            agent_id: run.agent_id.clone(),
            status: run.status.as_str(),
            version: to_i64(run.version),
            last_seq: to_i64(run.last_seq),
            created_at: run.created_at.0,
            updated_at: run.updated_at.0,
            expires_at: run.expires_at.map(|t| t.0),
            request_id: run.request_id.clone(),
            lease_owner: run.lease.as_ref().map(|lease| lease.owner.clone()),
            lease_expires_at: run.lease.as_ref().map(|lease| lease.expires_at.0),
            thread: run.thread.as_ref().map(threads::ThreadLinkRow::new),
            record: serde_json::to_vec(run).map_err(corrupt)?,
        })
    }
}

fn event_rows(events: &[Event]) -> Result<Vec<EventRow>, StoreError> {
    events
        .iter()
        .map(|event| {
            Ok(EventRow {
                seq: to_i64(event.seq),
                time: event.time.0,
                chunk: serde_json::to_vec(&event.chunk).map_err(corrupt)?,
            })
        })
        .collect()
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, applies pending
    /// migrations and starts the writer thread.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|e| StoreError::Backend(format!("creating {}: {e}", parent.display())))?;
        }
        let mut writer = Connection::open(&path).map_err(backend)?;
        configure(&writer).map_err(backend)?;
        writer
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(backend)?;
        migrate(&mut writer)?;

        let (writes, queue) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("agentd-sqlite-writer".into())
            .spawn(move || write_loop(writer, queue))
            .map_err(|e| StoreError::Backend(format!("starting the writer thread: {e}")))?;
        Ok(Self {
            writes,
            readers: Arc::new(ReaderPool {
                path,
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    async fn write(&self, kind: WriteKind, events: &[Event]) -> Result<(), StoreError> {
        let (done, result) = oneshot::channel();
        let write = Write {
            kind,
            events: event_rows(events)?,
            done,
        };
        self.writes
            .send(write)
            .map_err(|_| StoreError::Backend("the writer thread has stopped".into()))?;
        result
            .await
            .map_err(|_| StoreError::Backend("the writer thread has stopped".into()))?
    }

    async fn read<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let readers = Arc::clone(&self.readers);
        tokio::task::spawn_blocking(move || readers.with(query))
            .await
            .map_err(|e| StoreError::Backend(format!("read task failed: {e}")))?
    }
}

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // FULL: a commit is on disk before it is acknowledged, so a suspension a
    // client has seen survives power loss too. Group commit pays for it.
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")
}

fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let applied: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(backend)?;
    let applied = usize::try_from(applied).unwrap_or(usize::MAX);
    if applied > MIGRATIONS.len() {
        return Err(StoreError::Corrupt(format!(
            "the database has schema version {applied}, newer than this agentd knows ({})",
            MIGRATIONS.len()
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
        let tx = conn.transaction().map_err(backend)?;
        tx.execute_batch(sql).map_err(backend)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)
            .map_err(backend)?;
        tx.commit().map_err(backend)?;
    }
    Ok(())
}

/// The writer thread: takes every write waiting, commits them in one
/// transaction, then answers each.
fn write_loop(mut conn: Connection, mut queue: mpsc::UnboundedReceiver<Write>) {
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
    let mut tx = match conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(error) => return fail_all(error.to_string()),
    };
    let mut outcomes = Vec::with_capacity(batch.len());
    for write in batch {
        outcomes.push(apply_in_savepoint(&mut tx, write));
        // Some errors (disk full, I/O) make SQLite roll the whole
        // transaction back. Every write applied so far is gone, and a
        // savepoint opened now would start and commit a transaction of its
        // own, outside this batch: stop and fail the whole batch.
        if tx.is_autocommit() {
            return fail_all("the batch transaction was rolled back by SQLite".into());
        }
    }
    match tx.commit() {
        Ok(()) => outcomes,
        Err(error) => fail_all(error.to_string()),
    }
}

fn apply_in_savepoint(tx: &mut Transaction<'_>, write: &Write) -> Result<(), StoreError> {
    let savepoint = tx.savepoint().map_err(backend)?;
    apply(&savepoint, write)?;
    savepoint.commit().map_err(backend)
}

fn apply(conn: &Connection, write: &Write) -> Result<(), StoreError> {
    let run_id = match &write.kind {
        WriteKind::Create(run) => {
            if let Some(thread) = &run.thread {
                threads::advance(conn, run, thread)?;
            }
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO runs (id, agent_id, status, version, last_seq, created_at, updated_at, \
                     expires_at, request_id, record, lease_owner, lease_expires_at, tenant, thread_id) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) \
                     ON CONFLICT DO NOTHING",
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
            &run.id
        }
        WriteKind::Commit {
            run,
            expected_version,
        } => {
            let expected_version = *expected_version;
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
            if updated == 0 {
                let actual: Option<i64> = conn
                    .query_row("SELECT version FROM runs WHERE id = ?1", [&run.id], |row| {
                        row.get(0)
                    })
                    .optional()
                    .map_err(backend)?;
                return Err(match actual {
                    None => StoreError::NotFound,
                    Some(actual) => StoreError::VersionConflict {
                        expected: expected_version as u64,
                        actual: actual as u64,
                    },
                });
            }
            &run.id
        }
        WriteKind::Append {
            id,
            expected_version,
            last_seq,
            lease_expires_at,
        } => {
            leases::append(conn, id, *expected_version, *last_seq, *lease_expires_at)?;
            id
        }
        WriteKind::DeleteThread { tenant, thread_id } => {
            return threads::delete(conn, tenant, thread_id);
        }
    };
    let mut insert = conn
        .prepare_cached("INSERT INTO events (run_id, seq, time, chunk) VALUES (?1, ?2, ?3, ?4)")
        .map_err(backend)?;
    for event in &write.events {
        insert
            .execute(params![run_id, event.seq, event.time, event.chunk])
            .map_err(backend)?;
    }
    Ok(())
}

/// Read-only connections, opened on demand and kept for reuse.
struct ReaderPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl ReaderPool {
    fn with<T>(&self, query: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => {
                let conn = Connection::open_with_flags(
                    &self.path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .map_err(backend)?;
                conn.busy_timeout(std::time::Duration::from_secs(5))
                    .map_err(backend)?;
                conn
            }
        };
        let result = query(&conn);
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        result
    }
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        self.write(WriteKind::Create(RunRow::new(run)?), events).await
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError> {
        self.write(
            WriteKind::Commit {
                run: RunRow::new(run)?,
                expected_version: to_i64(expected_version),
            },
            events,
        )
        .await
    }

    async fn append_events(
        &self,
        id: RunId,
        expected_version: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        let kind = WriteKind::Append {
            id: id.to_string(),
            expected_version: to_i64(expected_version),
            last_seq: events.last().map(|event| to_i64(event.seq)),
            lease_expires_at: lease_expires_at.map(|at| at.0),
        };
        self.write(kind, events).await
    }

    async fn expired_leases(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.read(move |conn| leases::expired_leases(conn, now, limit))
            .await
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.read(move |conn| {
            let sql = format!("SELECT {} FROM runs WHERE id = ?1", leases::RECORD_COLUMNS);
            let record = conn
                .prepare_cached(&sql)
                .and_then(|mut select| {
                    select
                        .query_row([id.to_string()], leases::record_from_row)
                        .optional()
                })
                .map_err(backend)?;
            record.ok_or(StoreError::NotFound)?
        })
        .await
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        self.read(move |conn| {
            let id = id.to_string();
            let exists: Option<i64> = conn
                .prepare_cached("SELECT 1 FROM runs WHERE id = ?1")
                .and_then(|mut select| select.query_row([&id], |row| row.get(0)).optional())
                .map_err(backend)?;
            if exists.is_none() {
                return Err(StoreError::NotFound);
            }
            let mut select = conn
                .prepare_cached(
                    "SELECT seq, time, chunk FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
                )
                .map_err(backend)?;
            let rows = select
                .query_map(params![id, to_i64(after_seq)], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, Vec<u8>>(2)?,
                    ))
                })
                .map_err(backend)?;
            rows.map(|row| {
                let (seq, time, chunk) = row.map_err(backend)?;
                Ok(Event {
                    seq: seq as u64,
                    time: crate::time::Timestamp(time),
                    chunk: serde_json::from_slice(&chunk).map_err(corrupt)?,
                })
            })
            .collect()
        })
        .await
    }

    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError> {
        let (tenant, request_id) = (tenant.clone(), request_id.to_owned());
        self.read(move |conn| queries::find_run_by_request_id(conn, &tenant, &request_id))
            .await
    }

    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        let query = query.clone();
        self.read(move |conn| queries::list_runs(conn, &query)).await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.read(move |conn| queries::due_suspensions(conn, now, limit))
            .await
    }

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        self.read(move |conn| queries::count_runs_by_agent(conn, status))
            .await
    }

    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError> {
        let (tenant, id) = (tenant.clone(), id.clone());
        self.read(move |conn| threads::load_thread(conn, &tenant, &id))
            .await
    }

    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError> {
        let (tenant, id) = (tenant.clone(), id.clone());
        self.read(move |conn| threads::thread_runs(conn, &tenant, &id))
            .await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
        let query = query.clone();
        self.read(move |conn| threads::list_threads(conn, &query)).await
    }

    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError> {
        let kind = WriteKind::DeleteThread {
            tenant: tenant.to_string(),
            thread_id: id.to_string(),
        };
        self.write(kind, &[]).await
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        self.read(move |conn| threads::idle_threads(conn, cutoff, limit))
            .await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        if self.writes.is_closed() {
            return Err(StoreError::Backend("the writer thread has stopped".into()));
        }
        let path = self.readers.path.clone();
        tokio::task::spawn_blocking(move || queries::ping(&path))
            .await
            .map_err(|e| StoreError::Backend(format!("ping task failed: {e}")))?
    }
}
