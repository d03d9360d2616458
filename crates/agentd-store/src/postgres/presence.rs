//! Replica presence: how replicas sharing the store see at once that one of
//! them died. A replica that executes runs registers (a `replicas` row: its
//! replica id, the owner name in its leases, and a random key) and holds a
//! session-level advisory lock on that key, on a connection of its own,
//! for as long as it lives. PostgreSQL releases the lock when the session
//! ends: at once when the process dies (its socket closes), and after the
//! TCP keepalives below when its host vanishes. From then on every other
//! replica's search for orphans (`read.rs`) finds its running runs,
//! whatever their leases say. While the lock is held, its runs are orphans
//! only once their leases expire: however loaded the machine, nothing about
//! the lock depends on the process answering in time.
//!
//! If the connection breaks while the process lives (the database
//! restarted, the network cut), the replica registers again at once, under
//! a fresh key. Meanwhile other replicas may take its runs over: the
//! version compare-and-set of every write then refuses the executions here
//! (they are fenced and stop, as after any takeover), so a run never has
//! two writers. Presence never writes a run. It ends, and its lock with its
//! connection, when it is dropped.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Config, NoTls};

use super::{backend, connect_error};
use crate::StoreError;
use agentd_domain::Timestamp;

/// How often the presence connection checks that it is up; this also keeps
/// it from ever looking idle (to `idle_session_timeout`, or a proxy).
const PING_EVERY: Duration = Duration::from_secs(2);
/// The pause between attempts to register again.
const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// TCP keepalives on both ends of the presence connection: a peer that
/// vanished (a host powered off, a network cut) is noticed after about
/// `IDLE + INTERVAL * RETRIES` (10 s) of silence.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(5);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(1);
const KEEPALIVE_RETRIES: u32 = 5;
/// Data sent and not acknowledged for this long breaks the connection (a
/// ping to a database host that vanished).
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(10);
/// Keys tried before giving up; one is all it takes unless another
/// application happens to hold the same advisory lock.
const KEY_ATTEMPTS: usize = 8;

/// The rows of `table` whose `lock_key` lock some session holds now, as
/// the CTE `live(id)` of their `id` column. An advisory lock on one bigint
/// key shows in `pg_locks` with the key's high 32 bits as `classid`, its
/// low 32 bits as `objid`, and `objsubid` 1. Materialised, so that
/// `pg_locks` is read once per statement.
pub(super) fn held_locks(table: &str, id: &str) -> String {
    format!(
        "live AS MATERIALIZED (SELECT p.{id} FROM {table} p \
         JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
         AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
         AND l.classid = (p.lock_key >> 32)::oid AND l.objid = (p.lock_key & 4294967295)::oid)"
    )
}

/// The replicas whose lock is held now, as the CTE `live(replica_id)`.
pub(super) fn live_replicas() -> String {
    held_locks("replicas", "replica_id")
}

/// Records this replica's key, unless another live session registered the
/// same replica id (no row comes back then).
fn register_sql() -> String {
    format!(
        "WITH {} \
         INSERT INTO replicas (replica_id, lock_key, registered_at) VALUES ($1, $2, $3) \
         ON CONFLICT (replica_id) DO UPDATE \
         SET lock_key = EXCLUDED.lock_key, registered_at = EXCLUDED.registered_at \
         WHERE replicas.replica_id NOT IN (SELECT replica_id FROM live) \
         RETURNING 1",
        live_replicas()
    )
}

/// Deletes the rows of replicas that are gone and own no running run.
fn forget_departed_sql() -> String {
    format!(
        "WITH {} \
         DELETE FROM replicas p WHERE p.replica_id NOT IN (SELECT replica_id FROM live) \
         AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status = 'running' AND r.lease_owner = p.replica_id)",
        live_replicas()
    )
}

/// Expires the leases of the running runs leased to `$1`. The lease is a
/// column of its own, which reads lay over the record, so the record stays
/// as its last write left it; the takeover goes through the version
/// compare-and-set as every other.
const RELEASE_PREDECESSORS_RUNS: &str =
    "UPDATE runs SET lease_expires_at = 0 WHERE status = 'running' AND lease_owner = $1";

/// This replica's registration, held until dropped.
pub(super) struct Presence {
    pub(super) replica_id: String,
    /// Dropped with the presence: the keeping task then ends and closes the
    /// connection.
    _stop: oneshot::Sender<()>,
}

impl Presence {
    /// Registers `replica_id` with the database `config` names and keeps
    /// its lock, registering again whenever the connection breaks. `InUse`
    /// if a live process registered that id.
    pub(super) async fn start(config: &Config, replica_id: &str) -> Result<Self, StoreError> {
        let config = presence_config(config);
        let session = Session::open(&config, replica_id).await?;
        tracing::info!(replica_id, "registered as a live replica");
        // Registering proved that no live process holds this id: the runs
        // leased to it were left by an earlier one. Releasing their leases
        // lets the next search for orphans take them over, rather than
        // their leases' expiry. Only here, at the process's first
        // registration: a registration after a broken connection is this
        // process's own, and its runs execute here.
        let released = session
            .client
            .execute(RELEASE_PREDECESSORS_RUNS, &[&replica_id])
            .await
            .map_err(backend)?;
        if released > 0 {
            tracing::info!(
                replica_id,
                runs = released,
                "released the leases of the runs an earlier process with this replica id left running: \
                 they are taken over at once"
            );
        }
        let (stop, stopped) = oneshot::channel();
        let keeper = Keeper {
            config,
            replica_id: replica_id.to_owned(),
        };
        tokio::spawn(keeper.run(session, stopped));
        Ok(Self {
            replica_id: replica_id.to_owned(),
            _stop: stop,
        })
    }
}

/// The connection settings of the presence connection: the store's, with
/// TCP keepalives and a user timeout.
fn presence_config(config: &Config) -> Config {
    let mut config = config.clone();
    config
        .keepalives(true)
        .keepalives_idle(KEEPALIVE_IDLE)
        .keepalives_interval(KEEPALIVE_INTERVAL)
        .keepalives_retries(KEEPALIVE_RETRIES)
        .tcp_user_timeout(TCP_USER_TIMEOUT);
    config
}

/// The server's end of the keepalives (ignored on a Unix socket).
fn server_keepalives_sql() -> String {
    format!(
        "SET tcp_keepalives_idle = {}; SET tcp_keepalives_interval = {}; SET tcp_keepalives_count = {}",
        KEEPALIVE_IDLE.as_secs(),
        KEEPALIVE_INTERVAL.as_secs(),
        KEEPALIVE_RETRIES
    )
}

/// A random positive key: the low bits of a fresh UUIDv7 are random.
fn random_key() -> i64 {
    let bits = uuid::Uuid::now_v7().as_u128() as u64;
    (bits & i64::MAX as u64) as i64
}

/// Takes a session-level advisory lock on a fresh random key; the key.
pub(super) async fn lock_fresh_key(client: &Client) -> Result<i64, StoreError> {
    for _ in 0..KEY_ATTEMPTS {
        let key = random_key();
        let locked: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .await
            .map_err(backend)?
            .get(0);
        if locked {
            return Ok(key);
        }
    }
    Err(StoreError::Backend("no free advisory lock key found".into()))
}

/// One session that holds this replica's lock.
struct Session {
    client: Client,
    /// Drives the connection; ends when it breaks, or closes it once the
    /// client is dropped.
    driver: JoinHandle<Result<(), tokio_postgres::Error>>,
}

impl Session {
    /// Connects, takes a lock on a fresh key and records it for
    /// `replica_id`.
    async fn open(config: &Config, replica_id: &str) -> Result<Self, StoreError> {
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|error| connect_error(config, error))?;
        let session = Self {
            client,
            driver: tokio::spawn(connection),
        };
        session
            .client
            .batch_execute(&server_keepalives_sql())
            .await
            .map_err(backend)?;
        let key = lock_fresh_key(&session.client).await?;
        let registered = session
            .client
            .query_opt(&register_sql(), &[&replica_id, &key, &Timestamp::now().0])
            .await
            .map_err(backend)?;
        if registered.is_none() {
            // Dropping the session releases the lock just taken.
            return Err(StoreError::InUse(format!(
                "the replica id {replica_id:?} is registered by another live process: \
                 give every replica its own --replica-id"
            )));
        }
        session
            .client
            .batch_execute(&forget_departed_sql())
            .await
            .map_err(backend)?;
        Ok(session)
    }

    /// Resolves once the connection is broken, with why.
    async fn broken(&mut self) -> StoreError {
        let mut ticks = tokio::time::interval(PING_EVERY);
        loop {
            tokio::select! {
                ended = &mut self.driver => {
                    return match ended {
                        Ok(Ok(())) => StoreError::Backend("the connection closed".into()),
                        Ok(Err(error)) => backend(error),
                        Err(error) => StoreError::Backend(error.to_string()),
                    };
                }
                _ = ticks.tick() => {
                    if let Err(error) = self.client.batch_execute("SELECT 1").await {
                        return backend(error);
                    }
                }
            }
        }
    }
}

/// Holds the lock for as long as the presence lives.
struct Keeper {
    config: Config,
    replica_id: String,
}

impl Keeper {
    async fn run(self, mut session: Session, mut stopped: oneshot::Receiver<()>) {
        loop {
            tokio::select! {
                _ = &mut stopped => return,
                error = session.broken() => tracing::warn!(
                    replica_id = %self.replica_id,
                    %error,
                    "the presence connection broke: registering again; meanwhile other replicas \
                     may take over the runs executing here (they then stop here)"
                ),
            }
            session = tokio::select! {
                _ = &mut stopped => return,
                session = self.register_again() => session,
            };
        }
    }

    /// Registers until it succeeds.
    async fn register_again(&self) -> Session {
        loop {
            match Session::open(&self.config, &self.replica_id).await {
                Ok(session) => {
                    tracing::info!(replica_id = %self.replica_id, "registered again as a live replica");
                    return session;
                }
                Err(error) => {
                    tracing::warn!(replica_id = %self.replica_id, %error, "could not register again; retrying");
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }
}
