//! Replica presence on PostgreSQL: a registered replica's running runs are
//! never orphans while its session holds its lock, however far their
//! leases are from expiring, and are orphans at once when that session
//! ends; a second live process cannot register the same replica id; a
//! replica whose presence connection breaks registers again by itself; a
//! process that registers an id releases the leases its earlier process
//! left.
//! PostgreSQL tells nobody when a session's locks go, so the tests look
//! again (every 10 ms, for at most 10 s) until the store answers as
//! expected.

use std::future::Future;
use std::time::{Duration, Instant};

use agentd::domain::{RunId, Timestamp};
use agentd::store::{Holder, Orphan, PostgresStore, Presence, RunQueries, RunStore, StoreError};

use super::leases::running_run;
use crate::pg::TestSchema;

const GIVE_UP: Duration = Duration::from_secs(10);
const HOUR_MICROS: i64 = 3_600_000_000;

/// Waits until `check` holds; how long that took.
async fn eventually<Fut: Future<Output = bool>>(what: &str, check: impl Fn() -> Fut) -> Duration {
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < GIVE_UP, "{what}: not within {GIVE_UP:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

/// What `store` finds orphaned now among `ours`.
async fn orphans_among(store: &PostgresStore, ours: &[RunId]) -> Vec<Orphan> {
    store
        .orphaned_runs(Timestamp::now(), 10_000)
        .await
        .expect("orphaned_runs")
        .into_iter()
        .filter(|orphan| ours.contains(&orphan.id))
        .collect()
}

fn open(schema: &TestSchema) -> PostgresStore {
    PostgresStore::open(&schema.url()).expect("open postgres")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_registered_replicas_runs_are_orphans_only_once_its_session_ends() {
    let schema = TestSchema::create().await;
    let observer = open(&schema);
    let holder = open(&schema);
    holder.register_replica("replica-a").await.expect("register");
    // Registering again under the same id changes nothing.
    holder
        .register_replica("replica-a")
        .await
        .expect("register again");

    let now = Timestamp::now();
    let far = Timestamp(now.0 + HOUR_MICROS);
    let alive = running_run("replica-a", far);
    let unregistered = running_run("replica-never-registered", far);
    let stuck = running_run("replica-a", Timestamp(now.0 - HOUR_MICROS));
    for run in [&alive, &unregistered, &stuck] {
        observer.create_run(run, &[]).await.expect("create");
    }
    let ours = [alive.id, unregistered.id, stuck.id];

    // While the lock is held, only an expired lease makes an orphan, and
    // its holder is known to live.
    assert_eq!(
        orphans_among(&observer, &ours).await,
        vec![Orphan {
            id: stuck.id,
            holder: Holder::Live
        }]
    );

    // Another live process cannot register as replica-a.
    let twin = open(&schema);
    let refused = twin.register_replica("replica-a").await;
    assert!(matches!(refused, Err(StoreError::InUse(_))), "{refused:?}");
    assert_eq!(orphans_among(&observer, &ours).await.len(), 1);

    // The process goes: its session, and its lock, end with its connection.
    drop(holder);
    let gone = Holder::Gone {
        owner: "replica-a".into(),
    };
    let took = eventually("replica-a's runs became orphans", || async {
        orphans_among(&observer, &ours).await.len() == 2
    })
    .await;
    let mut found = orphans_among(&observer, &ours).await;
    found.sort_by_key(|orphan| orphan.id != stuck.id);
    assert_eq!(
        found,
        vec![
            Orphan {
                id: stuck.id,
                holder: gone.clone()
            },
            Orphan {
                id: alive.id,
                holder: gone
            },
        ],
        "a lease an hour from expiring does not keep a dead replica's run"
    );
    println!("runs of a closed session found orphaned after {took:?}");

    // The id is free again: a new process under it registers, which proves
    // that the runs leased to the id are its earlier process's. They stay
    // orphans, leases released, under the new live holder's name.
    twin.register_replica("replica-a").await.expect("register after");
    let mut found = orphans_among(&observer, &ours).await;
    found.sort_by_key(|orphan| orphan.id != stuck.id);
    assert_eq!(
        found,
        vec![
            Orphan {
                id: stuck.id,
                holder: Holder::Live
            },
            Orphan {
                id: alive.id,
                holder: Holder::Live
            },
        ]
    );
    // A run it takes after registering is its own: not an orphan.
    let own = running_run("replica-a", far);
    observer.create_run(&own, &[]).await.expect("create");
    let ours = [stuck.id, alive.id, own.id];
    assert_eq!(orphans_among(&observer, &ours).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_replica_whose_presence_connection_breaks_registers_again() {
    let schema = TestSchema::create().await;
    let observer = open(&schema);
    let holder = open(&schema);
    holder.register_replica("replica-a").await.expect("register");
    let run = running_run("replica-a", Timestamp(Timestamp::now().0 + HOUR_MICROS));
    observer.create_run(&run, &[]).await.expect("create");

    let sql = schema.client().await;
    let key_of_a = || async {
        let row = sql
            .query_one(
                "SELECT lock_key FROM replicas WHERE replica_id = 'replica-a'",
                &[],
            )
            .await
            .expect("replica-a's row");
        row.get::<_, i64>(0)
    };
    let first_key = key_of_a().await;
    // The database ends the presence session (as a restart would), and
    // waits until it is gone.
    let terminated: bool = sql
        .query_one(
            "SELECT pg_terminate_backend(l.pid, 5000) FROM pg_locks l \
             WHERE l.locktype = 'advisory' AND l.objsubid = 1 \
             AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid",
            &[&first_key],
        )
        .await
        .expect("terminate the presence session")
        .get(0);
    assert!(terminated);

    eventually("replica-a registered again", || async {
        key_of_a().await != first_key && orphans_among(&observer, &[run.id]).await.is_empty()
    })
    .await;
}
