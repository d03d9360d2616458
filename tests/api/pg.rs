//! The PostgreSQL the tests use: `AGENTD_TEST_POSTGRES_URL` names it
//! (`.ci/run` sets it). Each test works in a fresh schema of its own,
//! created for it and dropped afterwards, so tests never see each other's
//! runs or notifications. Every test that needs PostgreSQL is marked
//! `#[ignore]` with that reason, so that a plain `cargo test` lists it as
//! not run; `cargo test -- --include-ignored` (as `.ci/run` does) runs it,
//! and it fails without the variable. Also checks the store's migrations
//! when several replicas open it at once.

use tokio_postgres::NoTls;

const URL_VARIABLE: &str = "AGENTD_TEST_POSTGRES_URL";

/// The database URL; panics without one (the test was asked to run).
pub(crate) fn base_url() -> String {
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "{URL_VARIABLE} is not set, and this test needs PostgreSQL: set it, e.g. to \
             postgres://postgres@127.0.0.1:5432/test (.ci/run starts PostgreSQL and sets it)"
        ),
    }
}

/// A fresh schema, dropped (with everything in it) when this is dropped.
pub(crate) struct TestSchema {
    base: String,
    name: String,
}

impl TestSchema {
    /// Creates a schema in the test database.
    pub(crate) async fn create() -> Self {
        let base = base_url();
        let name = format!("agentd_test_{}", uuid::Uuid::now_v7().simple());
        execute(&base, &format!("CREATE SCHEMA {name}")).await;
        Self { base, name }
    }

    /// The schema's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The store URL of this schema: the base URL with its search_path.
    pub(crate) fn url(&self) -> String {
        let separator = if self.base.contains('?') { '&' } else { '?' };
        format!("{}{separator}options=-csearch_path%3D{}", self.base, self.name)
    }
}

impl TestSchema {
    /// A connection of the test's own to this schema, its driver running
    /// until the client is dropped.
    pub(crate) async fn client(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.url(), NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to the test schema: {e}"));
        tokio::spawn(connection);
        client
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let base = self.base.clone();
        let sql = format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name);
        // Drop may run inside or outside a runtime: use a thread of its own.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(execute(&base, &sql));
        })
        .join();
        if dropped.is_err() && !std::thread::panicking() {
            panic!("could not drop the test schema {}", self.name);
        }
    }
}

async fn execute(url: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connecting to the test PostgreSQL at {url}: {e}"));
    let driver = tokio::spawn(connection);
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    drop(client);
    let _ = driver.await;
}

/// Replicas that start together on a fresh schema: every one opens the
/// store, and the migrations are applied exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn replicas_opening_a_fresh_schema_together_migrate_it_once() {
    const REPLICAS: usize = 6;
    let schema = TestSchema::create().await;
    let opens: Vec<_> = (0..REPLICAS)
        .map(|_| {
            let url = schema.url();
            tokio::task::spawn_blocking(move || agentd::store::PostgresStore::open(&url).map(drop))
        })
        .collect();
    for open in opens {
        open.await
            .expect("open task")
            .expect("every replica opens the store");
    }
    let (client, connection) = tokio_postgres::connect(&schema.url(), NoTls)
        .await
        .expect("connect");
    let driver = tokio::spawn(connection);
    let versions: Vec<i64> = client
        .query("SELECT version FROM schema_migrations ORDER BY version", &[])
        .await
        .expect("schema_migrations")
        .iter()
        .map(|row| row.get(0))
        .collect();
    // Without the lock, replicas racing through the same migration fail
    // (and `version` is the table's key, so none is recorded twice).
    let expected: Vec<i64> = (1..=versions.len() as i64).collect();
    assert!(!versions.is_empty(), "the migrations were applied");
    assert_eq!(versions, expected, "every migration applied, in order");
    drop(client);
    let _ = driver.await;
}
