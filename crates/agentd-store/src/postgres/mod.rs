//! The PostgreSQL run store, for several replicas sharing one database.
//! Same contract as SQLite: each write is one statement (record and events
//! in one multi-row insert, atomic), guarded by a version compare-and-set.
//! Every committed write also NOTIFYs the other replicas while any
//! listens (see `write.rs` and `listen.rs`), so that any replica can
//! follow any run live. A
//! replica that registers holds a lock for its whole life (`presence.rs`),
//! so that the others take its runs over as soon as it dies.
//!
//! Built on tokio-postgres with a deadpool pool: plain runtime queries
//! (prepared and cached per connection), LISTEN/NOTIFY on a dedicated
//! connection, and no compile-time SQL checking that would need a database
//! at build time.

mod create;
mod grants;
mod listen;
mod migrate;
mod presence;
mod push_configs;
mod read;
mod run_events;
mod threads;
mod webhooks;
mod write;

use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use super::{
    AttemptOutcome, Claim, DeliveryClaim, DeliveryId, DeliveryLedger, Enqueue, GrantStore, Orphan, Presence,
    PushConfig, PushConfigStore, RunEventLog, RunEventPage, RunFeed, RunQueries, RunQuery, RunStore, Sharing,
    StoreError, ThreadStore,
};
use agentd_domain::{
    Event, EventPosition, Grant, RunEventKind, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadQuery,
    ThreadRecord, Timestamp,
};

/// Connections each server keeps to the database at most (the LISTEN
/// and presence connections come on top).
pub const POOL_SIZE: usize = 16;

pub struct PostgresStore {
    pool: Pool,
    /// The NOTIFY channel of this schema.
    channel: String,
    /// This store's id in notifications, so that it skips its own.
    origin: String,
    feed: Arc<listen::Listener>,
    /// Changed after each write here that stored a run event, and by the
    /// listener whenever another replica wrote (or it may have missed a
    /// notification).
    run_events: tokio::sync::watch::Sender<()>,
    /// Where the presence connection connects.
    config: tokio_postgres::Config,
    /// This process's registration as a live replica, once it registered.
    presence: tokio::sync::Mutex<Option<presence::Presence>>,
}

fn backend(error: tokio_postgres::Error) -> StoreError {
    // A server error's Display is just "db error"; its details say more.
    match error.as_db_error() {
        Some(db) if *db.code() == tokio_postgres::error::SqlState::DISK_FULL => {
            StoreError::Full(db.to_string())
        }
        Some(db) => StoreError::Backend(db.to_string()),
        None => StoreError::Backend(with_causes(&error)),
    }
}

/// An error's text followed by each of its causes: tokio-postgres says
/// only `error connecting to server`, and keeps the reason in its source.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let next = error.to_string();
        if !text.ends_with(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = error.source();
    }
    text
}

/// A failed connection to the database `config` names: where it was
/// tried (each host and port, the user and database) and why it failed.
fn connect_error(config: &tokio_postgres::Config, error: tokio_postgres::Error) -> StoreError {
    if error.as_db_error().is_some() {
        return backend(error);
    }
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(index, host)| {
            let host = match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                #[cfg(unix)]
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            };
            // One port for every host, or one each; 5432 when none is given.
            let port = ports.get(index).or(ports.first()).copied().unwrap_or(5432);
            format!("{host}:{port}")
        })
        .collect();
    let hosts = if hosts.is_empty() {
        "localhost:5432".to_owned()
    } else {
        hosts.join(", ")
    };
    let mut whom = Vec::new();
    if let Some(user) = config.get_user() {
        whom.push(format!("user {user}"));
    }
    if let Some(database) = config.get_dbname() {
        whom.push(format!("database {database}"));
    }
    let whom = if whom.is_empty() {
        String::new()
    } else {
        format!(" ({})", whom.join(", "))
    };
    StoreError::Backend(format!(
        "cannot connect to PostgreSQL at {hosts}{whom}: {}",
        with_causes(&error)
    ))
}

fn pool_error(error: deadpool_postgres::PoolError) -> StoreError {
    match error {
        deadpool_postgres::PoolError::Backend(error) => backend(error),
        other => StoreError::Backend(other.to_string()),
    }
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The NOTIFY channel of `schema`: one per schema, so that stores in
/// different schemas of one database never hear each other. Channel names
/// are identifiers (at most 63 bytes): long ones are hashed.
fn channel_name(schema: &str) -> String {
    let name = if schema == "public" {
        "agentd_runs".to_owned()
    } else {
        format!("agentd_runs_{schema}")
    };
    if name.len() <= 63 {
        return name;
    }
    let hash = schema.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("agentd_runs_{hash:016x}")
}

impl PostgresStore {
    /// Connects to the database `url` names (`postgres://user@host:port/db`,
    /// with any libpq-style parameter tokio-postgres knows, such as
    /// `options=-csearch_path%3Dmyschema`), applies pending migrations and
    /// starts listening for other replicas' notifications. Must be called
    /// inside a Tokio runtime, which runs the listener.
    pub fn open(url: &str) -> Result<Self, StoreError> {
        let config = tokio_postgres::Config::from_str(url)
            .map_err(|e| StoreError::Backend(format!("invalid PostgreSQL URL: {e}")))?;
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| StoreError::Backend("opening a PostgreSQL store needs a Tokio runtime".into()))?;
        let schema = migrate::run(&config)?;
        let channel = channel_name(&schema);
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|e| StoreError::Backend(format!("building the connection pool: {e}")))?;
        let origin = uuid::Uuid::now_v7().to_string();
        let run_events = tokio::sync::watch::Sender::new(());
        let feed = listen::Listener::start(
            &runtime,
            config.clone(),
            channel.clone(),
            origin.clone(),
            pool.clone(),
            run_events.clone(),
        );
        Ok(Self {
            pool,
            channel,
            origin,
            feed,
            run_events,
            config,
            presence: tokio::sync::Mutex::new(None),
        })
    }

    /// Tells this process's followers of the run events that one was stored.
    fn run_event_stored(&self) {
        self.run_events.send_replace(());
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        create::create(self, run, events).await
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        read::load_run(&self.client().await?, id).await
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
        run_events: &[RunEventKind],
    ) -> Result<(), StoreError> {
        write::commit(self, run, expected_version, events, run_events).await
    }

    async fn append_events(
        &self,
        id: RunId,
        expected_version: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        write::append(self, id, expected_version, lease_expires_at, events).await
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        read::read_events(&self.client().await?, id, after_seq).await
    }

    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError> {
        read::find_run_by_request_id(&self.client().await?, tenant, request_id).await
    }
}

#[async_trait]
impl RunQueries for PostgresStore {
    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        read::list_runs(&self.client().await?, query).await
    }

    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError> {
        read::count_runs(&self.client().await?, query).await
    }

    async fn count_runs_by_agent(
        &self,
        status: RunStatus,
    ) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
        read::count_runs_by_agent(&self.client().await?, status).await
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        read::due_suspensions(&self.client().await?, now, limit).await
    }

    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError> {
        read::orphaned_runs(&self.client().await?, now, limit).await
    }
}

#[async_trait]
impl ThreadStore for PostgresStore {
    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError> {
        threads::load_thread(&self.client().await?, tenant, id).await
    }

    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError> {
        threads::thread_runs(&self.client().await?, tenant, id).await
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
        threads::list_threads(&self.client().await?, query).await
    }

    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError> {
        threads::delete_thread(&mut self.client().await?, tenant, id).await
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        threads::idle_threads(&self.client().await?, cutoff, limit).await
    }
}

#[async_trait]
impl RunEventLog for PostgresStore {
    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError> {
        run_events::read(&self.client().await?, tenant, after, limit).await
    }

    async fn run_events_head(&self) -> Result<EventPosition, StoreError> {
        run_events::head(&self.client().await?).await
    }

    fn run_events_signal(&self) -> tokio::sync::watch::Receiver<()> {
        self.run_events.subscribe()
    }
}

#[async_trait]
impl DeliveryLedger for PostgresStore {
    async fn ledger_cursor(&self, webhook: &str, start: EventPosition) -> Result<EventPosition, StoreError> {
        webhooks::cursor(&self.client().await?, webhook, start).await
    }

    async fn enqueue_deliveries(&self, webhook: &str, enqueue: &Enqueue<'_>) -> Result<bool, StoreError> {
        webhooks::enqueue(&self.client().await?, webhook, enqueue).await
    }

    async fn claim_deliveries(&self, webhook: &str, claim: &Claim<'_>) -> Result<DeliveryClaim, StoreError> {
        webhooks::claim(&self.client().await?, webhook, claim).await
    }

    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        webhooks::finish(&self.client().await?, id, attempt, outcome, now).await
    }

    async fn pending_deliveries(&self) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
        webhooks::pending(&self.client().await?).await
    }
}

#[async_trait]
impl GrantStore for PostgresStore {
    async fn put_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        grants::put(&self.client().await?, grant).await
    }

    async fn grants(
        &self,
        tenant: &Tenant,
        run: Option<RunId>,
        thread: Option<&ThreadId>,
    ) -> Result<Vec<Grant>, StoreError> {
        grants::of(&self.client().await?, tenant, run, thread).await
    }

    async fn delete_grant(&self, tenant: &Tenant, id: &str) -> Result<bool, StoreError> {
        grants::delete(&self.client().await?, tenant, id).await
    }
}

#[async_trait]
impl PushConfigStore for PostgresStore {
    async fn put_push_config(&self, config: &PushConfig) -> Result<(), StoreError> {
        push_configs::put(&self.client().await?, config).await
    }

    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError> {
        if run_ids.is_empty() {
            return Ok(Vec::new());
        }
        push_configs::of_runs(&self.client().await?, run_ids).await
    }

    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError> {
        push_configs::delete(&self.client().await?, run_id, id).await
    }
}

#[async_trait]
impl Presence for PostgresStore {
    fn sharing(&self) -> Sharing {
        Sharing::Shared(Arc::clone(&self.feed) as Arc<dyn RunFeed>)
    }

    async fn register_replica(&self, replica_id: &str) -> Result<(), StoreError> {
        let mut registered = self.presence.lock().await;
        if registered
            .as_ref()
            .is_some_and(|presence| presence.replica_id == replica_id)
        {
            return Ok(());
        }
        *registered = Some(presence::Presence::start(&self.config, replica_id).await?);
        Ok(())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let probe = "INSERT INTO health_probe (id, probed_at) VALUES (1, $1) \
                     ON CONFLICT (id) DO UPDATE SET probed_at = EXCLUDED.probed_at";
        self.client()
            .await?
            .execute(probe, &[&Timestamp::now().0])
            .await
            .map_err(backend)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::channel_name;

    #[test]
    fn channel_names_fit_an_identifier() {
        assert_eq!(channel_name("public"), "agentd_runs");
        assert_eq!(channel_name("t_1"), "agentd_runs_t_1");
        let long = channel_name(&"s".repeat(63));
        assert!(long.len() <= 63, "{long}");
        assert_ne!(long, channel_name(&"t".repeat(63)));
    }
}
