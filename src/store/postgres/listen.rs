//! The PostgreSQL store's feed: one dedicated connection per server LISTENs
//! on the schema's channel and hands every other server's notification to
//! this server's subscribers. When the connection drops it reconnects (with
//! a growing pause) and, once listening again, tells subscribers to
//! `Resync`: notifications sent meanwhile are lost, the store is not.
//! The task ends when the store is dropped.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::Pool;
use serde::Deserialize;
use tokio::sync::{broadcast, oneshot, watch};
use tokio_postgres::{AsyncMessage, NoTls};

use super::{backend, pool_error};
use crate::store::corrupt;
use crate::store::{FeedItem, FeedMessage, RunFeed, StoreError};

/// Items a subscriber may fall behind by before it is told to `Resync`.
const CAPACITY: usize = 4096;
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const MAX_PAUSE: Duration = Duration::from_secs(5);

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
        let mut first = true;
        loop {
            let connected_at = tokio::time::Instant::now();
            tokio::select! {
                _ = &mut stopped => return,
                ended = self.listen(first) => {
                    match ended {
                        Ok(()) => tracing::warn!(channel = %self.channel, "the LISTEN connection closed; reconnecting"),
                        Err(error) => tracing::warn!(channel = %self.channel, %error, "the LISTEN connection failed; reconnecting"),
                    }
                }
            }
            first = false;
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

    /// Connects, listens and forwards notifications until the connection
    /// ends.
    async fn listen(&self, first: bool) -> Result<(), StoreError> {
        let (client, mut connection) = self
            .config
            .connect(NoTls)
            .await
            .map_err(|error| super::connect_error(&self.config, error))?;
        let sql = format!("LISTEN \"{}\"", self.channel.replace('"', "\"\""));
        let listen = client.batch_execute(&sql);
        tokio::pin!(listen);
        let mut listening = false;
        loop {
            tokio::select! {
                result = &mut listen, if !listening => {
                    result.map_err(backend)?;
                    listening = true;
                    tracing::debug!(channel = %self.channel, "listening for other replicas");
                    if !first {
                        let _ = self.items.send(FeedItem::Resync);
                        self.run_events.send_replace(());
                    }
                }
                message = poll_fn(|cx| connection.poll_message(cx)) => match message {
                    Some(Ok(AsyncMessage::Notification(notification))) => self.forward(notification.payload()),
                    Some(Ok(_)) => {}
                    Some(Err(error)) => return Err(backend(error)),
                    None => return Ok(()),
                },
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
