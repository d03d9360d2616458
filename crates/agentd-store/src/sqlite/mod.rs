//! The SQLite run store, the embedded default. One writer thread owns the
//! write connection and commits whatever writes are waiting together (group
//! commit: one fsync for many runs). Each write is checked before it
//! changes anything, so that one write's conflict never undoes another's
//! without a savepoint per write (see `apply`). Reads use a small pool
//! of connections on the blocking thread pool; WAL lets them run beside the
//! writer. Never blocks an async worker thread on SQLite.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::{mpsc, oneshot};

mod apply;
mod durability;
mod grants;
mod leases;
mod lock;
mod push_configs;
mod queries;
mod readers;
mod run_events;
mod threads;
mod webhooks;
mod writer;

pub(crate) use durability::parse_location;
pub use durability::Synchronous;

use readers::ReaderPool;

use super::record::{self, event_batch, EventBatch};
use super::{
    corrupt, AttemptOutcome, Claim, DeliveryClaim, DeliveryId, DeliveryLedger, Enqueue, GrantStore, Orphan,
    Presence, PushConfig, PushConfigStore, RunEventLog, RunEventPage, RunQueries, RunQuery, RunStore,
    Sharing, StoreError, ThreadStore,
};
use agentd_domain::{
    Event, EventPosition, Grant, RunEventKind, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery,
    ThreadRecord, Timestamp,
};

/// Schema migrations, applied in order on open; `PRAGMA user_version`
/// records how many have run.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_runs.sql"),
    include_str!("migrations/0002_run_queries.sql"),
    include_str!("migrations/0003_leases.sql"),
    include_str!("migrations/0004_tenants.sql"),
    include_str!("migrations/0005_threads.sql"),
    include_str!("migrations/0006_event_batches.sql"),
    include_str!("migrations/0007_live_run_indexes.sql"),
    include_str!("migrations/0008_health_probe.sql"),
    include_str!("migrations/0009_run_events.sql"),
    include_str!("migrations/0010_webhook_deliveries.sql"),
    include_str!("migrations/0011_run_events_unindexed_by_run.sql"),
    include_str!("migrations/0012_a2a_push_configs.sql"),
    include_str!("migrations/0013_run_event_decisions.sql"),
    include_str!("migrations/0014_grants.sql"),
    include_str!("migrations/0015_wake_times.sql"),
];

/// The most writes committed in one transaction.
const MAX_BATCH: usize = 512;

pub struct SqliteStore {
    writes: mpsc::UnboundedSender<Write>,
    /// Changed by the writer after each commit that stored a run event.
    run_events: tokio::sync::watch::Receiver<()>,
    readers: Arc<ReaderPool>,
    /// No other process opens the database while this store is open (see
    /// `lock.rs`).
    _lock: lock::StoreLock,
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
    /// A suspended run's expiry, for the event of its suspension.
    expires_at: Option<i64>,
    /// When the sweep next looks at a suspended run (`RunRecord::wakes_at`).
    wakes_at: Option<i64>,
    /// When a suspended run last reminded, for the event of the reminder.
    reminded_at: Option<i64>,
    request_id: Option<String>,
    lease_owner: Option<String>,
    lease_expires_at: Option<i64>,
    /// The run's thread, and the latest run it must follow there.
    thread: Option<threads::ThreadLinkRow>,
    record: Vec<u8>,
    /// A suspended run's pending calls, for the event of its suspension.
    pending: Option<Vec<u8>>,
    /// The decisions of its latest change, for the event of the change.
    decisions: Option<Vec<u8>>,
}

/// The events of one write, encoded together as one row.
enum WriteKind {
    Create {
        run: RunRow,
        run_events: Vec<RunEventKind>,
    },
    Commit {
        run: RunRow,
        expected_version: i64,
        run_events: Vec<RunEventKind>,
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
    /// The health check's write (see [`Presence::ping`]).
    Probe {
        at: i64,
    },
    /// A write of the webhook delivery ledger (`webhooks.rs`).
    Ledger(webhooks::LedgerWrite),
}

struct Write {
    kind: WriteKind,
    events: Option<EventBatch>,
    done: oneshot::Sender<Result<apply::Reply, StoreError>>,
}

fn backend(error: rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => StoreError::Full(error.to_string()),
        _ => StoreError::Backend(error.to_string()),
    }
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
            status: run.status().as_str(),
            version: to_i64(run.version()),
            last_seq: to_i64(run.last_seq()),
            created_at: run.created_at.0,
            updated_at: run.updated_at.0,
            expires_at: run.expires_at().map(|t| t.0),
            wakes_at: run.wakes_at().map(|t| t.0),
            reminded_at: run.reminded_at().map(|t| t.0),
            request_id: run.request_id.clone(),
            lease_owner: run.lease().as_ref().map(|lease| lease.owner.clone()),
            lease_expires_at: run.lease().as_ref().map(|lease| lease.expires_at.0),
            thread: run.thread.as_ref().map(threads::ThreadLinkRow::new),
            record: crate::record::encode_run(run)?,
            pending: match run.status() {
                RunStatus::Suspended => Some(crate::encoding::encode(&run.pending())?),
                _ => None,
            },
            decisions: crate::record::event_decisions(run, false)?,
        })
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, applies pending
    /// migrations and starts the writer thread; commits are `FULL`y
    /// durable.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, Synchronous::default())
    }

    /// [`SqliteStore::open`] with commits as durable as `synchronous` says.
    pub fn open_with(path: impl AsRef<Path>, synchronous: Synchronous) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        prepare_folder(folder, &path)?;
        // Before the database is touched: another server may be using it.
        let lock = lock::acquire(&path)?;
        let mut writer = Connection::open(&path).map_err(backend)?;
        configure(&writer, synchronous).map_err(backend)?;
        writer
            .pragma_update(None, "journal_mode", "WAL")
            .map_err(backend)?;
        migrate(&mut writer)?;

        let (writes, queue) = mpsc::unbounded_channel();
        let (signal, run_events) = tokio::sync::watch::channel(());
        std::thread::Builder::new()
            .name("agentd-sqlite-writer".into())
            .spawn(move || writer::write_loop(writer, queue, signal))
            .map_err(|e| StoreError::Backend(format!("starting the writer thread: {e}")))?;
        Ok(Self {
            writes,
            run_events,
            readers: Arc::new(ReaderPool::new(path)),
            _lock: lock,
        })
    }

    async fn write(&self, kind: WriteKind, events: &[Event]) -> Result<(), StoreError> {
        self.write_with_reply(kind, events).await.map(|_| ())
    }

    /// [`SqliteStore::write`], with what the write answers.
    async fn write_with_reply(&self, kind: WriteKind, events: &[Event]) -> Result<apply::Reply, StoreError> {
        let (done, result) = oneshot::channel();
        let write = Write {
            kind,
            events: event_batch(events)?,
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
        self.readers.read(query).await
    }
}

/// Creates the folder of the database at `path` if it is missing, and
/// checks that the server can write in it: SQLite's own errors say only
/// `unable to open database file`, naming neither the folder nor the
/// cause.
fn prepare_folder(folder: &Path, path: &Path) -> Result<(), StoreError> {
    // The folder, or the one of its parents, that is a file.
    let not_a_folder = || {
        let file = folder
            .ancestors()
            .find(|ancestor| std::fs::metadata(ancestor).is_ok_and(|metadata| !metadata.is_dir()))
            .unwrap_or(folder);
        StoreError::Backend(format!(
            "{} is not a directory (it is to hold the SQLite database {})",
            file.display(),
            path.display()
        ))
    };
    match std::fs::metadata(folder) {
        Ok(metadata) if !metadata.is_dir() => return Err(not_a_folder()),
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => return Err(not_a_folder()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(folder).map_err(|error| match error.kind() {
                std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::NotADirectory => not_a_folder(),
                _ => StoreError::Backend(format!("creating the directory {}: {error}", folder.display())),
            })?;
        }
        Err(error) => {
            return Err(StoreError::Backend(format!(
                "reading the directory {}: {error}",
                folder.display()
            )))
        }
    }
    // SQLite creates its journal files beside the database: the folder
    // must be writable even when the database file already exists.
    let probe = folder.join(format!(".agentd-write-check-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|error| {
            StoreError::Backend(format!(
                "cannot write in the directory {} (it holds the SQLite database {}): {error}",
                folder.display(),
                path.display()
            ))
        })
}

fn configure(conn: &Connection, synchronous: Synchronous) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    stable_plans(conn)?;
    // FULL by default: a commit is on disk before it is acknowledged, so a
    // suspension a client has seen survives power loss too. Group commit
    // pays for it (see `durability.rs`).
    conn.pragma_update(None, "synchronous", synchronous.as_str())?;
    conn.pragma_update(None, "foreign_keys", "ON")
}

/// Query plans that do not depend on the values bound: otherwise SQLite
/// marks some cached statements to be compiled again whenever a parameter
/// is bound anew, and the writer re-prepared its run `UPDATE` (with every
/// index of `runs` to maintain) on nearly every write: a tenth of the
/// server's instructions in the profile.
pub(super) fn stable_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map(|_| ())
}

/// The migration that stores a write's events as one row.
const EVENT_BATCHES: usize = 6;

/// Moves the chunks stored one row each in `events` into `event_batches`
/// (a batch of one each, as each was a write's row of its own), then drops
/// `events`; part of migration 0006's transaction.
fn move_single_events(conn: &Connection) -> Result<(), StoreError> {
    let mut select = conn
        .prepare("SELECT run_id, seq, time, chunk FROM events")
        .map_err(backend)?;
    let mut insert = conn
        .prepare("INSERT INTO event_batches (run_id, last_seq, first_seq, events) VALUES (?1, ?2, ?2, ?3)")
        .map_err(backend)?;
    let mut rows = select.query([]).map_err(backend)?;
    while let Some(row) = rows.next().map_err(backend)? {
        let run_id: String = row.get(0).map_err(backend)?;
        let seq: i64 = row.get(1).map_err(backend)?;
        let event = Event {
            seq: u64::try_from(seq).map_err(corrupt)?,
            time: agentd_domain::Timestamp(row.get(2).map_err(backend)?),
            chunk: crate::encoding::decode(&row.get::<_, Vec<u8>>(3).map_err(backend)?)?,
        };
        let batch = crate::encoding::encode(&[event])?;
        insert.execute(params![run_id, seq, batch]).map_err(backend)?;
    }
    drop(rows);
    drop(select);
    conn.execute_batch("DROP TABLE events").map_err(backend)
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
        if index + 1 == EVENT_BATCHES {
            move_single_events(&tx)?;
        }
        tx.pragma_update(None, "user_version", index as i64 + 1)
            .map_err(backend)?;
        tx.commit().map_err(backend)?;
    }
    Ok(())
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        let kind = WriteKind::Create {
            run: RunRow::new(run)?,
            run_events: RunEventKind::of_write(Some(RunEventKind::Started), run.status()),
        };
        self.write(kind, events).await
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

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
        run_events: &[RunEventKind],
    ) -> Result<(), StoreError> {
        let kind = WriteKind::Commit {
            run: RunRow::new(run)?,
            expected_version: to_i64(expected_version),
            run_events: run_events.to_vec(),
        };
        self.write(kind, events).await
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
                    "SELECT events FROM event_batches WHERE run_id = ?1 AND last_seq > ?2 ORDER BY last_seq",
                )
                .map_err(backend)?;
            let batches = select
                .query_map(params![id, to_i64(after_seq)], |row| row.get::<_, Vec<u8>>(0))
                .map_err(backend)?;
            let mut events = Vec::new();
            for batch in batches {
                record::extend_events(&mut events, &batch.map_err(backend)?, after_seq)?;
            }
            Ok(events)
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
}

#[async_trait]
impl RunQueries for SqliteStore {
    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        let query = query.clone();
        self.read(move |conn| queries::list_runs(conn, &query)).await
    }

    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError> {
        let query = query.clone();
        self.read(move |conn| queries::count_runs(conn, &query)).await
    }

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        self.read(move |conn| queries::count_runs_by_agent(conn, status))
            .await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        self.read(move |conn| queries::due_suspensions(conn, now, limit))
            .await
    }

    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError> {
        let expired = self
            .read(move |conn| leases::expired_leases(conn, now, limit))
            .await?;
        Ok(expired.into_iter().map(Orphan::expired).collect())
    }
}

#[async_trait]
impl ThreadStore for SqliteStore {
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
}

#[async_trait]
impl RunEventLog for SqliteStore {
    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError> {
        let tenant = tenant.cloned();
        self.read(move |conn| run_events::read(conn, tenant.as_ref(), after, limit))
            .await
    }

    async fn run_events_head(&self) -> Result<EventPosition, StoreError> {
        self.read(run_events::head).await
    }

    fn run_events_signal(&self) -> tokio::sync::watch::Receiver<()> {
        self.run_events.clone()
    }
}

#[async_trait]
impl DeliveryLedger for SqliteStore {
    async fn ledger_cursor(&self, webhook: &str, start: EventPosition) -> Result<EventPosition, StoreError> {
        let write = webhooks::LedgerWrite::Cursor {
            webhook: webhook.to_owned(),
            start,
        };
        self.ledger(write).await?.cursor()
    }

    async fn enqueue_deliveries(&self, webhook: &str, enqueue: &Enqueue<'_>) -> Result<bool, StoreError> {
        let write = webhooks::LedgerWrite::Enqueue {
            webhook: webhook.to_owned(),
            from: enqueue.from,
            to: enqueue.to,
            deliveries: enqueue.deliveries.to_vec(),
            now: enqueue.now,
        };
        self.ledger(write).await?.changed()
    }

    async fn claim_deliveries(&self, webhook: &str, claim: &Claim<'_>) -> Result<DeliveryClaim, StoreError> {
        let write = webhooks::LedgerWrite::Claim {
            webhook: webhook.to_owned(),
            owner: claim.owner.to_owned(),
            now: claim.now,
            lease_until: claim.lease_until,
            limit: claim.limit,
        };
        self.ledger(write).await?.claim()
    }

    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let write = webhooks::LedgerWrite::Finish {
            id,
            attempt,
            outcome: outcome.clone(),
            now,
        };
        self.ledger(write).await?.changed()
    }

    async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        self.read(webhooks::pending).await
    }
}

#[async_trait]
impl PushConfigStore for SqliteStore {
    async fn put_push_config(&self, config: &PushConfig) -> Result<(), StoreError> {
        self.ledger(webhooks::LedgerWrite::PutPushConfig(config.clone()))
            .await
            .map(|_| ())
    }

    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError> {
        if run_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut run_ids = run_ids.to_vec();
        run_ids.sort_unstable();
        run_ids.dedup();
        self.read(move |conn| push_configs::of_runs(conn, &run_ids)).await
    }

    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError> {
        let write = webhooks::LedgerWrite::DeletePushConfig {
            run_id,
            id: id.to_owned(),
        };
        self.ledger(write).await?.changed()
    }
}

#[async_trait]
impl GrantStore for SqliteStore {
    async fn put_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        self.ledger(webhooks::LedgerWrite::PutGrant(grant.clone()))
            .await
            .map(|_| ())
    }

    async fn grants(
        &self,
        tenant: &Tenant,
        run: Option<RunId>,
        thread: Option<&ThreadId>,
    ) -> Result<Vec<Grant>, StoreError> {
        let (tenant, thread) = (tenant.clone(), thread.cloned());
        self.read(move |conn| grants::of(conn, &tenant, run, thread.as_ref()))
            .await
    }

    async fn delete_grant(&self, tenant: &Tenant, id: &str) -> Result<bool, StoreError> {
        let write = webhooks::LedgerWrite::DeleteGrant {
            tenant: tenant.to_string(),
            id: id.to_owned(),
        };
        self.ledger(write).await?.changed()
    }
}

#[async_trait]
impl Presence for SqliteStore {
    /// The lock file keeps every other process out (see `sqlite/lock.rs`).
    fn sharing(&self) -> Sharing {
        Sharing::Owned
    }

    /// One process owns the store: its orphans are found at startup.
    async fn register_replica(&self, _replica_id: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let probe = WriteKind::Probe {
            at: Timestamp::now().0,
        };
        self.write(probe, &[]).await?;
        let path = self.readers.path().to_path_buf();
        tokio::task::spawn_blocking(move || queries::ping(&path))
            .await
            .map_err(|e| StoreError::Backend(format!("ping task failed: {e}")))?
    }
}

impl SqliteStore {
    async fn ledger(&self, write: webhooks::LedgerWrite) -> Result<apply::Reply, StoreError> {
        self.write_with_reply(WriteKind::Ledger(write), &[]).await
    }
}
