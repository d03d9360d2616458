//! One conformance suite for every store backend. Each backend is a
//! `#[tokio::test]` that builds a fresh store and hands it to
//! [`conformance`]; a new backend (Postgres, ...) needs only one more such
//! test. Backend-specific behaviour (SQLite durability across reopen) is
//! tested beside it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use agentd::domain::{
    AskUserOption, AskUserPayload, Chunk, Event, FinishReason, Lease, Message, PendingCall, PendingCalls,
    Phase, RunEventKind, RunFailure, RunId, RunOptions, RunParts, RunRecord, RunState, RunStatus,
    SelectionMode, SuspendPayload, Timestamp, ToolCall, Usage, Waiting,
};
use agentd::store::{MemoryStore, Presence, RunStore, Sharing, SqliteStore, Store, StoreError};
use serde_json::json;
use tokio::sync::{Barrier, OwnedRwLockWriteGuard, RwLock};
use tokio::task::JoinHandle;

mod deliveries;
mod grants;
mod leases;
mod listeners;
mod presence;
mod push_configs;
mod queries;
mod run_events;
mod tenants;
mod threads;

/// A store of any backend, as the suite takes it.
type AnyStore = Arc<dyn Store>;

// ---------------------------------------------------------------- backends

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_store_conforms() {
    let store = MemoryStore::default();
    assert!(matches!(store.sharing(), Sharing::Owned));
    conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_conforms() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path().join("x.sqlite3")).expect("open sqlite");
    assert!(matches!(store.sharing(), Sharing::Owned));
    conformance(Arc::new(store)).await;
}

/// The same suite against PostgreSQL, in a schema of its own (see
/// `pg.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn postgres_store_conforms() {
    let schema = crate::pg::TestSchema::create().await;
    let store = agentd::store::PostgresStore::open(&schema.url()).expect("open postgres");
    assert!(matches!(store.sharing(), Sharing::Shared(_)));
    conformance(Arc::new(store)).await;
}

/// A SQLite run reads back as its latest write stored it: a suspended run
/// read twice (as a Resume reads it), then answered, then suspended again
/// and resumed before anybody read it (a stale read would see it
/// suspended).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_reads_a_run_back_as_its_latest_write_stored_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: AnyStore = Arc::new(SqliteStore::open(dir.path().join("x.sqlite3")).expect("open"));
    let suspended = suspended_run("assistant");
    store
        .create_run(&suspended, &suspension_events(1))
        .await
        .expect("create");
    assert_eq!(store.load_run(suspended.id).await.expect("first read"), suspended);
    assert_eq!(
        store.load_run(suspended.id).await.expect("second read"),
        suspended
    );

    let (completed, _) = answer(&store, &suspended, "Pro").await;
    assert_eq!(store.load_run(completed.id).await.expect("read"), completed);

    // Suspended again, then moved on before anybody read it.
    let again = edited(&completed, |run| {
        run.phase = suspended_phase(run.created_at);
        run.version += 1;
    });
    store
        .commit(&again, completed.version(), &[], &status_events(&again))
        .await
        .expect("suspend");
    let running = edited(&again, |run| {
        run.phase = Phase::Running {
            lease: Lease {
                owner: "replica-a".into(),
                expires_at: Timestamp(run.updated_at.0 + 10_000_000),
            },
            pending: Vec::new(),
        };
        run.version += 1;
    });
    store
        .commit(&running, again.version(), &[], &status_events(&running))
        .await
        .expect("resume");
    assert_eq!(store.load_run(running.id).await.expect("read"), running);
}

/// SQLite stores a write's chunks as one row; a store from before that
/// (schema 5, one row per chunk in `events`) has its chunks moved into
/// batches when it is opened, and they read back and count as stored. Its
/// runs are in the partial indexes of live runs that came later.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_moves_chunks_stored_one_row_each_into_batches() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("x.sqlite3");
    let suspended = suspended_run("assistant");
    let first = suspension_events(1);
    {
        let store = SqliteStore::open(&path).expect("open");
        store.create_run(&suspended, &first).await.expect("create");
    }
    // Back to schema 5 (its event table and its indexes), with the same
    // chunks as an older server stored them.
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(
            "DROP INDEX runs_suspended_by_wake;
             ALTER TABLE runs RENAME COLUMN wakes_at TO expires_at;
             DROP INDEX runs_suspended_by_agent;
             DROP INDEX runs_running_by_lease;
             CREATE INDEX runs_by_status ON runs (status, id);
             CREATE INDEX runs_by_agent ON runs (agent_id, id);
             CREATE INDEX runs_by_status_agent ON runs (status, agent_id, id);
             CREATE INDEX runs_by_expiry ON runs (status, expires_at);
             CREATE INDEX runs_by_lease ON runs (status, lease_expires_at);
             DROP TABLE event_batches;
             DROP TABLE health_probe;
             DROP TABLE run_events;
             DROP TABLE ledger_cursors;
             DROP TABLE webhook_deliveries;
             DROP TABLE a2a_push_configs;
             DROP TABLE grants;
             CREATE TABLE events (
                 run_id TEXT NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL,
                 chunk BLOB NOT NULL, PRIMARY KEY (run_id, seq)
             ) WITHOUT ROWID;
             PRAGMA user_version = 5;",
        )
        .expect("schema 5");
        for event in &first {
            conn.execute(
                "INSERT INTO events (run_id, seq, time, chunk) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![
                    suspended.id.to_string(),
                    event.seq as i64,
                    event.time.0,
                    serde_json::to_vec(&event.chunk).expect("json"),
                ],
            )
            .expect("a row of one chunk");
        }
    }
    let store: AnyStore = Arc::new(SqliteStore::open(&path).expect("open and migrate"));
    assert_eq!(events_of(&store, suspended.id).await, first);
    let counted = store
        .count_runs_by_agent(RunStatus::Suspended)
        .await
        .expect("count");
    assert_eq!(
        counted,
        BTreeMap::from([("assistant".to_owned(), 1)]),
        "the index of suspended runs holds the runs stored before it existed"
    );
    let conn = rusqlite::Connection::open(&path).expect("open");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'event%'")
        .and_then(|mut select| select.query_map([], |row| row.get(0))?.collect())
        .expect("tables");
    assert_eq!(
        tables,
        ["event_batches"],
        "the rows of one chunk moved, and their table went"
    );

    moved_chunks_count_as_stored(&store, &suspended, &first).await;
}

/// PostgreSQL stores a write's chunks as one row too; a store from before
/// (schema 6: one row per chunk in `events`, listing indexes without a
/// tenant) has its chunks moved into batches when it is opened, whatever
/// encoding an earlier build gave them, and they read back in order; the
/// partial indexes of live runs replace the old ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn postgres_moves_chunks_stored_one_row_each_into_batches() {
    let schema = crate::pg::TestSchema::create().await;
    let suspended = suspended_run("assistant");
    let first = suspension_events(1);
    {
        let store = agentd::store::PostgresStore::open(&schema.url()).expect("open");
        store.create_run(&suspended, &first).await.expect("create");
    }
    let (client, connection) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(connection);
    client
        .batch_execute(
            "DROP TABLE event_batches;
             DROP TABLE replicas;
             DROP TABLE listeners;
             DROP TABLE a2a_push_configs;
             DROP TABLE grants;
             ALTER TABLE run_events DROP COLUMN decisions;
             ALTER TABLE webhook_deliveries DROP COLUMN target;
             ALTER TABLE webhook_deliveries ADD UNIQUE (webhook, event_major, event_minor);
             CREATE INDEX webhook_deliveries_by_run
                 ON webhook_deliveries (run_id, webhook, event_major, event_minor);
             CREATE INDEX run_events_by_run ON run_events (run_id);
             DROP INDEX runs_suspended_by_wake;
             ALTER TABLE runs RENAME COLUMN wakes_at TO expires_at;
             DROP INDEX runs_suspended_by_agent;
             DROP INDEX runs_running_by_lease;
             CREATE INDEX runs_by_status_agent ON runs (status, agent_id, id);
             CREATE INDEX runs_by_agent ON runs (agent_id, id);
             CREATE INDEX runs_by_expiry ON runs (status, expires_at);
             CREATE INDEX runs_by_lease ON runs (status, lease_expires_at);
             CREATE TABLE events (
                 run_id uuid NOT NULL, seq bigint NOT NULL, time bigint NOT NULL,
                 chunk bytea NOT NULL, PRIMARY KEY (run_id, seq));
             DELETE FROM schema_migrations WHERE version > 6;",
        )
        .await
        .expect("schema 6");
    for event in &first {
        client
            .execute(
                "INSERT INTO events (run_id, seq, time, chunk) VALUES ($1, $2, $3, $4)",
                &[
                    &suspended.id.0,
                    &(event.seq as i64),
                    &event.time.0,
                    &serde_json::to_vec(&event.chunk).expect("json"),
                ],
            )
            .await
            .expect("a row of one chunk");
    }
    let store: AnyStore =
        Arc::new(agentd::store::PostgresStore::open(&schema.url()).expect("open and migrate"));
    assert_eq!(events_of(&store, suspended.id).await, first);
    let tables: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name LIKE 'event%' ORDER BY 1",
            &[],
        )
        .await
        .expect("tables")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(
        tables,
        ["event_batches"],
        "the rows of one chunk moved, and their table went"
    );
    let indexes: Vec<String> = client
        .query(
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() \
             AND tablename = 'runs' AND indexname NOT LIKE 'runs_by_tenant%' ORDER BY 1",
            &[],
        )
        .await
        .expect("indexes")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(
        indexes,
        [
            "runs_by_thread",
            "runs_pkey",
            "runs_running_by_lease",
            "runs_suspended_by_agent",
            "runs_suspended_by_wake"
        ]
    );
    let counted = store
        .count_runs_by_agent(RunStatus::Suspended)
        .await
        .expect("count");
    assert_eq!(counted, BTreeMap::from([("assistant".to_owned(), 1)]));

    moved_chunks_count_as_stored(&store, &suspended, &first).await;
    drop(client);
    let _ = driver.await;
}

/// After chunks stored one row each were moved into batches: their seqs
/// are taken, and the run goes on after them, read back from any seq.
async fn moved_chunks_count_as_stored(store: &AnyStore, suspended: &RunRecord, first: &[Event]) {
    let again = store
        .commit(
            &suspended.clone(),
            suspended.version(),
            &first[1..],
            &status_events(&suspended.clone()),
        )
        .await;
    assert!(
        matches!(again, Err(StoreError::Backend(ref message)) if message.contains("stored already")),
        "a seq moved from a row of its own is taken: {again:?}"
    );
    let (completed, second) = answer(store, suspended, "Pro").await;
    assert_eq!(events_of(store, completed.id).await, concat(first, &second));
    let after = first.len() as u64 - 1;
    assert_eq!(
        store.read_events(completed.id, after).await.expect("read"),
        concat(&first[first.len() - 1..], &second)
    );
}

/// What a durable backend adds: a committed run is still there, whole, after
/// the store is dropped and the same database opened again.
/// SQLite guards a write's events by the run's stored `last_seq` (in the
/// update itself), so it refuses to store a run behind its own events: the
/// next write's guard would let it repeat a seq. The refusal changes
/// nothing, and a wrong version is still reported as a conflict first.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_refuses_a_run_stored_behind_its_events() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: AnyStore = Arc::new(SqliteStore::open(dir.path().join("x.sqlite3")).expect("open"));
    let behind = |result: Result<(), StoreError>| matches!(result, Err(StoreError::Backend(ref message)) if message.contains("after the run's last_seq"));

    let run = suspended_run("assistant");
    let first = suspension_events(1);
    let short = edited(&run, |run| run.last_seq = first.len() as u64 - 1);
    assert!(behind(store.create_run(&short, &first).await));
    assert!(matches!(store.load_run(run.id).await, Err(StoreError::NotFound)));

    assert_eq!(run.last_seq(), first.len() as u64);
    store.create_run(&run, &first).await.expect("create");
    let completed = completed_from(&run, "Pro");
    let second = resumption_events(run.last_seq() + 1, "Pro");
    let short = edited(&completed, |run| run.last_seq -= 1);
    assert!(behind(
        store
            .commit(&short, run.version(), &second, &status_events(&short))
            .await
    ));
    assert_conflict(
        store
            .commit(&short, run.version() + 1, &second, &status_events(&short))
            .await,
        run.version() + 1,
        run.version(),
    );
    assert_eq!(store.load_run(run.id).await.expect("load"), run);
    assert_eq!(events_of(&store, run.id).await, first);

    store
        .commit(&completed, run.version(), &second, &status_events(&completed))
        .await
        .expect("commit");
    assert_eq!(events_of(&store, run.id).await, concat(&first, &second));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_store_survives_reopen() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("x.sqlite3");

    let suspended = suspended_run("assistant");
    let first = suspension_events(1);
    let completed = completed_from(&suspended, "Pro");
    let second = resumption_events(suspended.last_seq() + 1, "Pro");
    let untouched = suspended_run("assistant");
    {
        let store: AnyStore = Arc::new(SqliteStore::open(&path).expect("open sqlite"));
        store.create_run(&suspended, &first).await.expect("create");
        store
            .commit(
                &completed,
                suspended.version(),
                &second,
                &status_events(&completed),
            )
            .await
            .expect("commit");
        store
            .create_run(&untouched, &first)
            .await
            .expect("create second run");
    }

    let store: AnyStore = Arc::new(SqliteStore::open(&path).expect("reopen sqlite"));
    assert_eq!(store.load_run(completed.id).await.expect("load"), completed);
    assert_eq!(events_of(&store, completed.id).await, concat(&first, &second));
    assert_eq!(store.read_events(completed.id, 5).await.expect("read"), second);
    assert_eq!(store.load_run(untouched.id).await.expect("load"), untouched);
    assert_eq!(events_of(&store, untouched.id).await, first);

    // The version guard survives too.
    let stale = store
        .commit(&completed, suspended.version(), &[], &status_events(&completed))
        .await;
    assert_conflict(stale, suspended.version(), completed.version());
    let mut next = edited(&completed, |run| run.version += 1);
    next.metadata.insert("reopened".into(), "yes".into());
    store
        .commit(&next, completed.version(), &[], &status_events(&next))
        .await
        .expect("commit after reopen");
    assert_eq!(store.load_run(next.id).await.expect("load"), next);
    assert!(matches!(
        store.create_run(&suspended, &[]).await,
        Err(StoreError::AlreadyExists)
    ));
}

// ------------------------------------------------------------------- suite

/// Every behaviour the `RunStore` trait promises. Uses fresh run ids only, so
/// it can run against a store that already holds data.
pub(crate) async fn conformance(store: AnyStore) {
    create_then_load_is_identical(&store).await;
    create_twice_is_already_exists(&store).await;
    request_id_names_one_run(&store).await;
    unknown_runs_are_not_found(&store).await;
    commit_replaces_record_and_appends_events(&store).await;
    stale_commit_changes_nothing(&store).await;
    failed_write_is_undone_whole(&store).await;
    read_events_after_seq(&store).await;
    racing_commits_have_one_winner(&store).await;
    mixed_burst_of_commits(&store).await;
    queries::queries_conform(&store).await;
    leases::leases_conform(&store).await;
    tenants::tenants_conform(&store).await;
    threads::threads_conform(&store).await;
    run_events::run_events_conform(&store).await;
    deliveries::deliveries_conform(&store).await;
    push_configs::push_configs_conform(&store).await;
    grants::grants_conform(&store).await;
}

async fn create_then_load_is_identical(store: &AnyStore) {
    let run = suspended_run("assistant");
    let events = suspension_events(1);
    store.create_run(&run, &events).await.expect("create");
    assert_eq!(store.load_run(run.id).await.expect("load"), run);
    assert_eq!(events_of(store, run.id).await, events);

    // A run created without events has an empty log, not a missing one.
    let bare = suspended_run("other-agent");
    store.create_run(&bare, &[]).await.expect("create without events");
    assert_eq!(store.load_run(bare.id).await.expect("load"), bare);
    assert_eq!(events_of(store, bare.id).await, Vec::<Event>::new());
}

async fn create_twice_is_already_exists(store: &AnyStore) {
    let run = suspended_run("assistant");
    let events = suspension_events(1);
    store.create_run(&run, &events).await.expect("create");

    // Same id, different content: refused, and the first stays as it was.
    let mut impostor = edited(&completed_from(&run, "Basic"), |run| run.version = 1);
    impostor.request_id = Some(format!("other-{}", run.id));
    let result = store.create_run(&impostor, &resumption_events(1, "Basic")).await;
    assert!(matches!(result, Err(StoreError::AlreadyExists)), "got {result:?}");
    assert_eq!(store.load_run(run.id).await.expect("load"), run);
    assert_eq!(events_of(store, run.id).await, events);
}

/// The request id is the idempotency key of StreamAgent: the store is what
/// makes two racing retries start one run, not two.
async fn request_id_names_one_run(store: &AnyStore) {
    let run = suspended_run("assistant");
    store
        .create_run(&run, &suspension_events(1))
        .await
        .expect("create");

    let mut retry = suspended_run("assistant");
    retry.request_id = run.request_id.clone();
    let result = store.create_run(&retry, &suspension_events(1)).await;
    assert!(matches!(result, Err(StoreError::AlreadyExists)), "got {result:?}");
    assert!(matches!(
        store.load_run(retry.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.read_events(retry.id, 0).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(store.load_run(run.id).await.expect("load"), run);

    // Runs without a request id never collide.
    for _ in 0..3 {
        let mut anonymous = suspended_run("assistant");
        anonymous.request_id = None;
        store
            .create_run(&anonymous, &[])
            .await
            .expect("create without request id");
        assert_eq!(store.load_run(anonymous.id).await.expect("load"), anonymous);
    }
}

async fn unknown_runs_are_not_found(store: &AnyStore) {
    let ghost = suspended_run("assistant");
    let result = store.load_run(ghost.id).await;
    assert!(matches!(result, Err(StoreError::NotFound)), "load: {result:?}");
    let result = store.read_events(ghost.id, 0).await;
    assert!(
        matches!(result, Err(StoreError::NotFound)),
        "read_events: {result:?}"
    );

    let result = store
        .commit(&ghost, 0, &suspension_events(1), &status_events(&ghost))
        .await;
    assert!(matches!(result, Err(StoreError::NotFound)), "commit: {result:?}");
    let result = store
        .commit(&ghost, ghost.version(), &[], &status_events(&ghost))
        .await;
    assert!(matches!(result, Err(StoreError::NotFound)), "commit: {result:?}");
    // A failed commit does not create the run.
    assert!(matches!(
        store.load_run(ghost.id).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.read_events(ghost.id, 0).await,
        Err(StoreError::NotFound)
    ));
}

async fn commit_replaces_record_and_appends_events(store: &AnyStore) {
    let run = suspended_run("assistant");
    let first = suspension_events(1);
    store.create_run(&run, &first).await.expect("create");

    let (completed, second) = answer(store, &run, "Pro").await;
    assert_eq!(store.load_run(run.id).await.expect("load"), completed);
    assert_eq!(events_of(store, run.id).await, concat(&first, &second));

    // A commit with no events changes the record only.
    let mut touched = edited(&completed, |run| run.version += 1);
    touched.updated_at = Timestamp(touched.updated_at.0 + 1);
    touched.metadata.insert("reviewed".into(), "true".into());
    store
        .commit(&touched, completed.version(), &[], &status_events(&touched))
        .await
        .expect("commit without events");
    assert_eq!(store.load_run(run.id).await.expect("load"), touched);
    assert_eq!(events_of(store, run.id).await, concat(&first, &second));
}

async fn stale_commit_changes_nothing(store: &AnyStore) {
    let run = suspended_run("assistant");
    let first = suspension_events(1);
    store.create_run(&run, &first).await.expect("create");
    let (completed, second) = answer(store, &run, "Pro").await;
    let log = concat(&first, &second);

    // Someone who read version 1 writes after the run moved to version 2.
    let late = edited(&completed_from(&run, "Enterprise"), |run| {
        run.phase = Phase::Cancelled {
            reason: "late".into(),
        };
    });
    let late_events = resumption_events(run.last_seq() + 1, "Enterprise");
    assert_conflict(
        store
            .commit(&late, run.version(), &late_events, &status_events(&late))
            .await,
        run.version(),
        completed.version(),
    );
    // A version from the future conflicts too.
    assert_conflict(
        store
            .commit(
                &late,
                completed.version() + 5,
                &late_events,
                &status_events(&late),
            )
            .await,
        completed.version() + 5,
        completed.version(),
    );
    // Events that would not even collide with stored seqs are not appended.
    let ahead = edited(&late, |run| run.version = completed.version() + 1);
    let ahead_events = resumption_events(completed.last_seq() + 1, "Enterprise");
    assert_conflict(
        store
            .commit(&ahead, run.version(), &ahead_events, &status_events(&ahead))
            .await,
        run.version(),
        completed.version(),
    );

    assert_eq!(store.load_run(run.id).await.expect("load"), completed);
    assert_eq!(events_of(store, run.id).await, log);
}

/// A write that fails half-way (the record fits, an event repeats a stored
/// seq) leaves no trace: the record is not replaced, no event is appended,
/// and the version guard still expects the old version.
async fn failed_write_is_undone_whole(store: &AnyStore) {
    let run = suspended_run("assistant");
    let first = suspension_events(1);
    store.create_run(&run, &first).await.expect("create");

    let completed = completed_from(&run, "Pro");
    // Starts at seq 5, which is stored already.
    let overlapping = resumption_events(run.last_seq(), "Pro");
    let result = store
        .commit(
            &completed,
            run.version(),
            &overlapping,
            &status_events(&completed),
        )
        .await;
    assert!(result.is_err(), "a commit repeating a stored seq must fail");
    assert!(
        !matches!(result, Err(StoreError::NotFound | StoreError::AlreadyExists)),
        "got {result:?}"
    );
    // The same seq twice in one write.
    let mut repeated = resumption_events(run.last_seq() + 1, "Pro");
    repeated[2].seq = repeated[1].seq;
    assert!(store
        .commit(&completed, run.version(), &repeated, &status_events(&completed))
        .await
        .is_err());
    assert_eq!(store.load_run(run.id).await.expect("load"), run);
    assert_eq!(events_of(store, run.id).await, first);

    // Nothing moved: the right write still goes through.
    let second = resumption_events(run.last_seq() + 1, "Pro");
    store
        .commit(&completed, run.version(), &second, &status_events(&completed))
        .await
        .expect("commit");
    assert_eq!(store.load_run(run.id).await.expect("load"), completed);
    assert_eq!(events_of(store, run.id).await, concat(&first, &second));

    // A create whose own events repeat a seq is refused whole too.
    let fresh = suspended_run("assistant");
    let mut events = suspension_events(1);
    events[4].seq = 4;
    assert!(store.create_run(&fresh, &events).await.is_err());
    assert!(matches!(
        store.load_run(fresh.id).await,
        Err(StoreError::NotFound)
    ));
}

async fn read_events_after_seq(store: &AnyStore) {
    let run = suspended_run("assistant");
    let first = suspension_events(1);
    store.create_run(&run, &first).await.expect("create");
    let (completed, second) = answer(store, &run, "Pro").await;
    let log = concat(&first, &second);
    assert_eq!(log.last().map(|e| e.seq), Some(completed.last_seq()));

    // A neighbour with the same seqs must not leak into this run's log.
    let neighbour = suspended_run("assistant");
    let neighbour_log = suspension_events(1);
    store
        .create_run(&neighbour, &neighbour_log)
        .await
        .expect("create neighbour");

    for after in 0..=completed.last_seq() + 2 {
        let expected: Vec<Event> = log.iter().filter(|e| e.seq > after).cloned().collect();
        let got = store.read_events(run.id, after).await.expect("read_events");
        assert_eq!(got, expected, "read_events(after_seq = {after})");
        let seqs: Vec<u64> = got.iter().map(|e| e.seq).collect();
        let contiguous: Vec<u64> = (after + 1..=completed.last_seq()).collect();
        assert_eq!(seqs, contiguous, "seqs after {after}");
    }
    assert_eq!(
        store.read_events(run.id, u64::MAX).await.expect("read_events"),
        Vec::new()
    );
    assert_eq!(events_of(store, neighbour.id).await, neighbour_log);
}

/// Many writers read version 1 and commit at once: exactly one wins, every
/// other one is told of the conflict, and only the winner's write is stored.
async fn racing_commits_have_one_winner(store: &AnyStore) {
    const WRITERS: usize = 16;
    let run = suspended_run("assistant");
    let first = suspension_events(1);
    store.create_run(&run, &first).await.expect("create");

    let barrier = Arc::new(Barrier::new(WRITERS));
    let tasks: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let store = Arc::clone(store);
            let barrier = Arc::clone(&barrier);
            let answer = format!("writer {writer}");
            let record = completed_from(&run, &answer);
            let events = resumption_events(run.last_seq() + 1, &answer);
            tokio::spawn(async move {
                barrier.wait().await;
                let outcome = store.commit(&record, 1, &events, &status_events(&record)).await;
                (record, events, outcome)
            })
        })
        .collect();

    let mut winners = Vec::new();
    for task in tasks {
        let (record, events, outcome) = task.await.expect("writer task");
        match outcome {
            Ok(()) => winners.push((record, events)),
            Err(StoreError::VersionConflict { expected, actual }) => {
                assert_eq!((expected, actual), (1, 2), "conflict details");
            }
            Err(other) => panic!("a racing commit failed with {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one racing commit may succeed");
    let (winner, winner_events) = winners.pop().unwrap();
    assert_eq!(store.load_run(run.id).await.expect("load"), winner);
    assert_eq!(events_of(store, run.id).await, concat(&first, &winner_events));
}

/// What one burst of writes asks for, and what each write must get.
enum Expect {
    Ok,
    Conflict {
        expected: u64,
    },
    NotFound,
    AlreadyExists,
    /// Any failure other than the ones above.
    Failed,
}

type Outcome = Result<(), StoreError>;

/// Writes spawned behind a closed gate, then let go all at once.
struct Burst {
    gate: Arc<RwLock<()>>,
    closed: Option<OwnedRwLockWriteGuard<()>>,
    writes: Vec<(String, Expect, JoinHandle<Outcome>)>,
}

impl Burst {
    fn new() -> Self {
        let gate = Arc::new(RwLock::new(()));
        let closed = Some(Arc::clone(&gate).try_write_owned().expect("a new lock is free"));
        Self {
            gate,
            closed,
            writes: Vec::new(),
        }
    }

    fn add(&mut self, name: String, expect: Expect, write: impl Future<Output = Outcome> + Send + 'static) {
        let gate = Arc::clone(&self.gate);
        let task = tokio::spawn(async move {
            drop(gate.read().await);
            write.await
        });
        self.writes.push((name, expect, task));
    }

    /// Opens the gate and returns each write's outcome.
    async fn run(mut self) -> Vec<(String, Expect, Outcome)> {
        // Let every task reach the gate first, so the writes really overlap.
        tokio::task::yield_now().await;
        drop(self.closed.take());
        let mut outcomes = Vec::new();
        for (name, expect, task) in self.writes {
            outcomes.push((name, expect, task.await.expect("write task")));
        }
        outcomes
    }
}

/// One burst mixing writes that must succeed with writes that must fail, on
/// many runs at once. A group-committing backend puts them in one
/// transaction; a failure must not undo (or leak into) any other write.
async fn mixed_burst_of_commits(store: &AnyStore) {
    const RUNS: usize = 12;
    let runs: Vec<RunRecord> = (0..RUNS).map(|_| suspended_run("assistant")).collect();
    let first = suspension_events(1);
    for run in &runs {
        store.create_run(run, &first).await.expect("create");
    }

    let mut burst = Burst::new();
    let mut final_state: Vec<(RunRecord, Vec<Event>)> = Vec::new();

    for (i, run) in runs.iter().enumerate() {
        // The write that must succeed.
        let good = completed_from(run, &format!("good {i}"));
        let good_events = resumption_events(run.last_seq() + 1, &format!("good {i}"));
        final_state.push((good.clone(), concat(&first, &good_events)));
        let s = Arc::clone(store);
        let (record, events) = (good.clone(), good_events.clone());
        burst.add(format!("good commit on run {i}"), Expect::Ok, async move {
            s.commit(&record, 1, &events, &status_events(&record)).await
        });

        // A write from a reader that saw a version that never was (stale
        // whichever order the burst is applied in): it must fail and leave
        // no trace, even with events whose seqs do not collide.
        let stale = edited(&completed_from(run, &format!("stale {i}")), |run| {
            run.phase = Phase::Failed {
                failure: RunFailure {
                    code: "stale".into(),
                    message: "never was".into(),
                },
            };
        });
        let stale_events = resumption_events(good.last_seq() + 1, &format!("stale {i}"));
        let s = Arc::clone(store);
        burst.add(
            format!("stale commit on run {i}"),
            Expect::Conflict { expected: 0 },
            async move { s.commit(&stale, 0, &stale_events, &status_events(&stale)).await },
        );

        // A duplicate create of the same id.
        let mut duplicate = suspended_run("assistant");
        duplicate.id = run.id;
        let s = Arc::clone(store);
        burst.add(
            format!("duplicate create of run {i}"),
            Expect::AlreadyExists,
            async move { s.create_run(&duplicate, &suspension_events(1)).await },
        );
    }

    // Writes with the right version whose events repeat a stored seq: the
    // record update applies, then the event insert fails. Each must be
    // undone whole, without touching the other writes of its batch.
    for i in 0..RUNS / 2 {
        let run = suspended_run("assistant");
        store.create_run(&run, &first).await.expect("create");
        final_state.push((run.clone(), first.clone()));
        let broken = completed_from(&run, &format!("broken {i}"));
        let events = resumption_events(run.last_seq(), &format!("broken {i}"));
        let s = Arc::clone(store);
        burst.add(
            format!("half-failing commit on run {i}"),
            Expect::Failed,
            async move { s.commit(&broken, 1, &events, &status_events(&broken)).await },
        );
    }

    // Writes on runs that do not exist, and brand new runs, in the same burst.
    for i in 0..2 {
        let ghost = completed_from(&suspended_run("assistant"), "ghost");
        let s = Arc::clone(store);
        burst.add(
            format!("commit on unknown run {i}"),
            Expect::NotFound,
            async move {
                s.commit(&ghost, 1, &resumption_events(6, "ghost"), &status_events(&ghost))
                    .await
            },
        );
        let fresh = suspended_run("assistant");
        final_state.push((fresh.clone(), first.clone()));
        let s = Arc::clone(store);
        let events = first.clone();
        burst.add(format!("create of new run {i}"), Expect::Ok, async move {
            s.create_run(&fresh, &events).await
        });
    }

    for (name, expect, outcome) in burst.run().await {
        match (expect, outcome) {
            (Expect::Ok, Ok(())) => {}
            (Expect::Conflict { expected }, Err(StoreError::VersionConflict { expected: e, actual })) => {
                assert_eq!(e, expected, "{name}: expected version in the conflict");
                assert!(actual == 1 || actual == 2, "{name}: actual version {actual}");
            }
            (Expect::NotFound, Err(StoreError::NotFound)) => {}
            (Expect::AlreadyExists, Err(StoreError::AlreadyExists)) => {}
            (Expect::Failed, Err(StoreError::Backend(_) | StoreError::Corrupt(_))) => {}
            (_, outcome) => panic!("{name}: unexpected outcome {outcome:?}"),
        }
    }

    for (record, events) in final_state {
        assert_eq!(store.load_run(record.id).await.expect("load"), record);
        assert_eq!(events_of(store, record.id).await, events);
    }
}

// ---------------------------------------------------------------- fixtures

fn assert_conflict(result: Result<(), StoreError>, expected: u64, actual: u64) {
    match result {
        Err(StoreError::VersionConflict {
            expected: e,
            actual: a,
        }) => assert_eq!((e, a), (expected, actual), "conflict details"),
        other => {
            panic!("expected VersionConflict {{ expected: {expected}, actual: {actual} }}, got {other:?}")
        }
    }
}

async fn events_of(store: &AnyStore, id: RunId) -> Vec<Event> {
    store.read_events(id, 0).await.expect("read_events")
}

fn concat(a: &[Event], b: &[Event]) -> Vec<Event> {
    a.iter().chain(b).cloned().collect()
}

fn plan_question() -> SuspendPayload {
    SuspendPayload::AskUser(AskUserPayload {
        question: "Which plan should I set up for you?".into(),
        options: ["Basic", "Pro", "Enterprise"]
            .into_iter()
            .map(|label| AskUserOption {
                label: label.into(),
                description: format!("The {label} plan — ünïcode and \"quotes\" survive"),
            })
            .collect(),
        selection_mode: SelectionMode::SingleSelect,
    })
}

fn ask_user_call() -> ToolCall {
    ToolCall {
        id: "call_01".into(),
        name: "ask_user".into(),
        args: json!({
            "question": "Which plan should I set up for you?",
            "options": [{"label": "Basic"}, {"label": "Pro"}, {"label": "Enterprise"}],
            "selectionMode": "single_select",
        })
        .into(),
    }
}

/// A run suspended on an ask_user call, at version 1 with 5 events stored.
/// The run events of a write that leaves `run` in its status, from a run
/// in another one: entering it, unless running (see
/// `RunEventKind::of_write`).
pub(crate) fn status_events(run: &RunRecord) -> Vec<RunEventKind> {
    RunEventKind::of_write(None, run.status())
}

pub(crate) fn suspended_run(agent_id: &str) -> RunRecord {
    let id = RunId::new();
    let created = Timestamp::now();
    RunParts {
        id,
        tenant: agentd::domain::Tenant::default(),
        agent_id: agent_id.into(),
        version: 1,
        last_seq: 5,
        created_at: created,
        updated_at: Timestamp(created.0 + 1_500),
        request_id: Some(format!("req-{id}")),
        metadata: BTreeMap::from([
            ("tenant".to_string(), "acme".to_string()),
            ("ticket".to_string(), "T-42".to_string()),
        ]),
        options: RunOptions {
            max_steps: 10,
            require_tool_approval: false,
            cancel_on_disconnect: true,
            suspend_ttl: std::time::Duration::from_secs(3600),
        },
        state: RunState {
            messages: vec![
                Message::System {
                    content: "You help people choose a plan.".into(),
                },
                Message::user("Help me pick a plan"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![ask_user_call()],
                },
            ],
            steps: 1,
            usage: Usage {
                input_tokens: 120,
                output_tokens: 34,
            },
            resumes: Vec::new(),
            answers: Vec::new(),
            edited_calls: Vec::new(),
            decisions: Vec::new(),
            changed_by: 0..0,
        },
        run_tools: Vec::new(),
        thread: None,
        trace: None,
        phase: suspended_phase(created),
    }
    .into()
}

/// `run` as records were stored before phases existed (layout 1): its
/// status, and each phase's data in fields of their own.
pub(crate) fn layout1(run: &RunRecord) -> serde_json::Value {
    let mut json = serde_json::to_value(run).expect("json");
    let object = json.as_object_mut().expect("an object");
    object.remove("phase");
    object.insert("status".into(), run.status().as_str().into());
    object.insert("expires_at".into(), serde_json::json!(run.expires_at()));
    object.insert("lease".into(), serde_json::json!(run.lease()));
    let state = object["state"].as_object_mut().expect("the state");
    state.insert("pending".into(), serde_json::json!(run.pending()));
    let (final_text, failure, cancel_reason) = match run.phase() {
        Phase::Completed { final_text } => (final_text.clone(), None, None),
        Phase::Failed { failure } => (String::new(), Some(failure.clone()), None),
        Phase::Cancelled { reason } => (String::new(), None, Some(reason.clone())),
        _ => (String::new(), None, None),
    };
    state.insert("final_text".into(), final_text.into());
    state.insert("failure".into(), serde_json::json!(failure));
    state.insert("cancel_reason".into(), serde_json::json!(cancel_reason));
    json
}

/// `run` with `edit` made to it, field by field: a store keeps whatever it
/// is given, so its tests store records no transition would make.
pub(crate) fn edited(run: &RunRecord, edit: impl FnOnce(&mut RunParts)) -> RunRecord {
    let mut parts = RunParts::from(run.clone());
    edit(&mut parts);
    parts.into()
}

/// Moves the expiry of suspended `run` to `at`.
pub(crate) fn expire_at(run: &mut RunRecord, at: Timestamp) {
    *run = edited(run, |run| {
        if let Phase::Suspended { expires_at, .. } = &mut run.phase {
            *expires_at = at;
        }
    });
}

/// Suspended on the ask_user call of [`suspended_run`], for a week from
/// `since`.
pub(crate) fn suspended_phase(since: Timestamp) -> Phase {
    Phase::Suspended {
        pending: PendingCalls::one(PendingCall {
            call: ask_user_call(),
            waiting: Waiting::Suspended {
                payload: plan_question(),
            },
            since: None,
        }),
        expires_at: Timestamp(since.0 + 7 * 24 * 3600 * 1_000_000),
        reminders: Vec::new(),
        reminded_at: None,
    }
}

/// `run` answered with `answer` and completed: version + 1, pending cleared.
/// Commits `run` answered with `answer` (see [`completed_from`]) and the
/// chunks of its continuation; returns both.
async fn answer(store: &AnyStore, run: &RunRecord, answer: &str) -> (RunRecord, Vec<Event>) {
    let completed = completed_from(run, answer);
    let events = resumption_events(run.last_seq() + 1, answer);
    store
        .commit(&completed, run.version(), &events, &status_events(&completed))
        .await
        .expect("commit");
    (completed, events)
}

fn completed_from(run: &RunRecord, answer: &str) -> RunRecord {
    let mut next = RunParts::from(run.clone());
    next.version = run.version() + 1;
    next.last_seq = run.last_seq() + resumption_events(1, answer).len() as u64;
    next.updated_at = Timestamp(run.updated_at.0 + 10_000);
    next.state.messages.push(Message::tool(
        "call_01",
        "ask_user",
        format!("User answered: {answer}"),
        false,
    ));
    let final_text = format!("Great, I'll set up {answer} for you.");
    next.state.messages.push(Message::Assistant {
        content: final_text.clone(),
        tool_calls: Vec::new(),
    });
    next.state.steps += 1;
    next.state.usage += Usage {
        input_tokens: 180,
        output_tokens: 12,
    };
    next.phase = Phase::Completed { final_text };
    next.into()
}

pub(crate) fn events_from(first_seq: u64, chunks: Vec<Chunk>) -> Vec<Event> {
    let now = Timestamp::now();
    chunks
        .into_iter()
        .zip(first_seq..)
        .map(|(chunk, seq)| Event {
            seq,
            time: Timestamp(now.0 + seq as i64),
            chunk,
        })
        .collect()
}

/// The stream of a run that suspends on ask_user.
fn suspension_events(first_seq: u64) -> Vec<Event> {
    let usage = Usage {
        input_tokens: 120,
        output_tokens: 34,
    };
    events_from(
        first_seq,
        vec![
            Chunk::Start {
                agent_id: "assistant".into(),
                resumed: false,
            },
            Chunk::StepStart { step: 1 },
            Chunk::ToolCall {
                call: ask_user_call(),
                original_args: None,
            },
            Chunk::ToolCallSuspended {
                call: ask_user_call(),
                payload: plan_question(),
                expires_at: Some(Timestamp(1_900_000_000_000_000)),
            },
            Chunk::Finish {
                reason: FinishReason::Suspended,
                usage,
                text: String::new(),
            },
        ],
    )
}

/// The stream of its resumption with `answer`.
fn resumption_events(first_seq: u64, answer: &str) -> Vec<Event> {
    let usage = Usage {
        input_tokens: 300,
        output_tokens: 46,
    };
    let text = format!("Great, I'll set up {answer} for you.");
    events_from(
        first_seq,
        vec![
            Chunk::Start {
                agent_id: "assistant".into(),
                resumed: true,
            },
            Chunk::ToolResult {
                tool_call_id: "call_01".into(),
                tool_name: "ask_user".into(),
                content: format!("User answered: {answer}"),
                is_error: false,
            },
            Chunk::StepStart { step: 2 },
            Chunk::TextDelta { text: text.clone() },
            Chunk::StepFinish {
                step: 2,
                usage: Usage {
                    input_tokens: 180,
                    output_tokens: 12,
                },
            },
            Chunk::Finish {
                reason: FinishReason::Stop,
                usage,
                text,
            },
        ],
    )
}
