//! The PostgreSQL store's feed: one dedicated connection per server LISTENs
//! on the schema's channel, registers in `listeners` (the other servers
//! notify only while a server other than themselves is registered, see
//! `write.rs`) and hands every other server's notification to this
//! server's subscribers. When the connection drops it reconnects (with a
//! growing pause); once registered, each time, it tells subscribers to
//! `Resync`: notifications sent meanwhile are lost, the store is not.
//! The task ends when the store is dropped.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::Pool;
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::presence::{held_locks, lock_fresh_key};
use super::{backend, pool_error};
use crate::corrupt;
use crate::{FeedItem, FeedMessage, RunFeed, StoreError};
use agentd_domain::Timestamp;

/// Items a subscriber may fall behind by before it is told to `Resync`.
const CAPACITY: usize = 4096;
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);
/// How often each server deletes the registrations of listeners that are
/// gone (until then, the others notify them for nothing).
const SWEEP_EVERY: Duration = Duration::from_secs(30);

pub(super) struct Listener {
    items: broadcast::Sender<FeedItem>,
    pool: Pool,
    channel: String,
    origin: String,
    /// Dropped with the store: the listening task then ends.
    _stop: oneshot::Sender<()>,
}

#[derive(Deserialize)]
struct Notice {
    origin: String,
    message: FeedMessage,
}

impl Listener {
    pub(super) fn start(
        runtime: &tokio::runtime::Handle,
        config: tokio_postgres::Config,
        channel: String,
        origin: String,
        pool: Pool,
        run_events: watch::Sender<()>,
    ) -> Arc<Self> {
        let (items, _) = broadcast::channel(CAPACITY);
        let (stop, stopped) = oneshot::channel();
        let task = Task {
            config,
            channel: channel.clone(),
            origin: origin.clone(),
            items: items.clone(),
            run_events,
        };
        runtime.spawn(task.run(stopped));
        Arc::new(Self {
            items,
            pool,
            channel,
            origin,
            _stop: stop,
        })
    }
}

#[async_trait]
impl RunFeed for Listener {
    fn subscribe(&self) -> broadcast::Receiver<FeedItem> {
        self.items.subscribe()
    }

    async fn publish(&self, message: &FeedMessage) -> Result<(), StoreError> {
        let payload = serde_json::to_string(&super::write::Notice {
            origin: &self.origin,
            message,
        })
        .map_err(corrupt)?;
        let client = self.pool.get().await.map_err(pool_error)?;
        client
            .execute("SELECT pg_notify($1, $2)", &[&self.channel, &payload])
            .await
            .map_err(backend)?;
        Ok(())
    }
}

struct Task {
    config: tokio_postgres::Config,
    channel: String,
    origin: String,
    items: broadcast::Sender<FeedItem>,
    /// Changed at every other replica's notification and at every
    /// reconnection: either may mean new run events.
    run_events: watch::Sender<()>,
}

impl Task {
    async fn run(self, mut stopped: oneshot::Receiver<()>) {
        let mut pause = FIRST_PAUSE;
        loop {
            let connected_at = tokio::time::Instant::now();
            tokio::select! {
                _ = &mut stopped => return,
                ended = self.listen() => {
                    match ended {
                        Ok(()) => tracing::warn!(channel = %self.channel, "the LISTEN connection closed; reconnecting"),
                        Err(error) => tracing::warn!(channel = %self.channel, %error, "the LISTEN connection failed; reconnecting"),
                    }
                }
            }
            // A connection that held for a while starts the pauses afresh.
            if connected_at.elapsed() > MAX_PAUSE {
                pause = FIRST_PAUSE;
            }
            tokio::select! {
                _ = &mut stopped => return,
                () = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    /// Connects, listens, registers as a listener and forwards
    /// notifications until the connection ends.
    async fn listen(&self) -> Result<(), StoreError> {
        let (client, mut connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|error| super::connect_error(&self.config, error))?;
        // The connection's messages, read on a task of its own so that
        // this one can wait on the client's queries. It ends when the
        // connection does, which dropping the client closes.
        let (messages, mut received) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
                if messages.send(message).is_err() {
                    return;
                }
            }
        });
        let sql = format!("LISTEN \"{}\"", self.channel.replace('"', "\"\""));
        client.batch_execute(&sql).await.map_err(backend)?;
        register(&client, &self.origin).await?;
        tracing::debug!(channel = %self.channel, "listening for other replicas");
        // Writes made while this server was not registered were not
        // announced to it: its subscribers read the store again (at the
        // first registration too, since the server may serve already).
        let _ = self.items.send(FeedItem::Resync);
        self.run_events.send_replace(());
        let mut sweeps = tokio::time::interval_at(tokio::time::Instant::now() + SWEEP_EVERY, SWEEP_EVERY);
        loop {
            tokio::select! {
                message = received.recv() => match message {
                    Some(Ok(AsyncMessage::Notification(notification))) => self.forward(notification.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(error)) => return Err(backend(error)),
                    None => return Ok(()),
                },
                _ = sweeps.tick() => client.batch_execute(&forget_departed_sql()).await.map_err(backend)?,
            }
        }
    }

    fn forward(&self, payload: &str) {
        match serde_json::from_str::<Notice>(payload) {
            Ok(notice) if notice.origin == self.origin => {}
            // Nobody subscribed is not an error.
            Ok(notice) => {
                let _ = self.items.send(FeedItem::Message(notice.message));
                self.run_events.send_replace(());
            }
            Err(error) => tracing::warn!(%error, "ignoring a notification that does not parse"),
        }
    }
}

/// Deletes the registrations whose lock nobody holds.
fn forget_departed_sql() -> String {
    format!(
        "WITH {} DELETE FROM listeners WHERE origin NOT IN (SELECT origin FROM live)",
        held_locks("listeners", "origin")
    )
}

/// Registers `origin` as a listener, holding a lock on a fresh key for as
/// long as `client`'s session lives. The table stays locked until the
/// registration commits: every write that looked for listeners before
/// then commits first (its snapshot could not see this registration, so
/// it does not notify, and the `Resync` after registering covers it), and
/// every write after it finds the registration and notifies.
async fn register(client: &Client, origin: &str) -> Result<(), StoreError> {
    let key = lock_fresh_key(client).await?;
    client
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE listeners IN ACCESS EXCLUSIVE MODE; {}",
            forget_departed_sql()
        ))
        .await
        .map_err(backend)?;
    client
        .execute(
            "INSERT INTO listeners (origin, lock_key, listening_since) VALUES ($1, $2, $3) \
             ON CONFLICT (origin) DO UPDATE \
             SET lock_key = EXCLUDED.lock_key, listening_since = EXCLUDED.listening_since",
            &[&origin, &key, &Timestamp::now().0],
        )
        .await
        .map_err(backend)?;
    // On an error the connection is dropped, and its transaction with it.
    client.batch_execute("COMMIT").await.map_err(backend)?;
    Ok(())
}
