//! Webhooks: the run events pushed to endpoints the operator configured
//! (`[[webhooks]]`), in the Standard Webhooks format, at least once, in
//! order per run, through crashes and across replicas.
//!
//! The run events are the outbox (each is stored in the write that changed
//! its run); the store's delivery ledger is the rest (see
//! `store/deliveries.rs`). Per webhook, each replica runs two tasks: the
//! enqueuer (`enqueue.rs`) turns the events the webhook wants into pending
//! deliveries, and the deliverer (`deliver.rs`) claims due ones and sends
//! them, each attempt on a task of its own. The request itself:
//! `payload.rs` (type, id, body) and `signature.rs`; when to retry:
//! `schedule.rs`; the configuration: `config.rs`.
//!
//! It never changes a run, and runs never wait for it: a slow or dead
//! endpoint costs its own tasks only.

mod config;
mod deliver;
mod endpoint;
mod enqueue;
mod payload;
mod schedule;
mod signature;

use std::sync::Arc;

use tokio::sync::Notify;
use tokio::task::JoinSet;

pub use config::{Known, Webhook, WebhookConfig, WebhookConfigError, DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT};
pub use endpoint::{Endpoint, StandardWebhook};
pub use payload::{event_type, message_id, parse_event_type, Payloads};
pub use schedule::RetrySchedule;
pub use signature::{Secret, SECRET_PREFIX};

use crate::runtime::Runtime;

/// The tasks that deliver a server's webhooks; dropping this stops them
/// (attempts in flight are abandoned, and their leases run out for a
/// later attempt).
pub struct WebhookTasks {
    tasks: JoinSet<()>,
}

/// Why webhooks could not start.
#[derive(Debug, thiserror::Error)]
#[error("webhooks: {0}")]
pub struct WebhookStartError(String);

impl WebhookStartError {
    pub fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

/// Starts delivering `webhooks` from `runtime`'s store, as one of the
/// replicas sharing it. Reads (or, for a webhook seen for the first time,
/// stores) each webhook's cursor before it returns: call it before serving
/// any request, so that a new webhook sends every event from then on.
pub async fn spawn(runtime: &Runtime, webhooks: &[Webhook]) -> Result<WebhookTasks, WebhookStartError> {
    let mut tasks = WebhookTasks::new();
    if webhooks.is_empty() {
        return Ok(tasks);
    }
    let payloads = Payloads::new().map_err(WebhookStartError)?;
    // Redirects are not followed: a webhook's URL is where it goes.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| WebhookStartError(format!("building the HTTP client: {error}")))?;
    for webhook in webhooks {
        tracing::info!(
            webhook = %webhook.name,
            events = ?webhook.events.iter().map(|kind| event_type(*kind)).collect::<Vec<_>>(),
            "delivering webhook"
        );
        let endpoint = StandardWebhook {
            webhook: webhook.clone(),
            payloads: payloads.clone(),
        };
        tasks.deliver(runtime, Arc::new(endpoint), client.clone()).await?;
    }
    Ok(tasks)
}

impl WebhookTasks {
    /// No deliveries yet.
    pub fn new() -> Self {
        Self {
            tasks: JoinSet::new(),
        }
    }

    /// Starts delivering `endpoint`'s ledger with `client`: its enqueuer
    /// and its deliverer. Reads (or stores) its cursor before it returns.
    pub async fn deliver(
        &mut self,
        runtime: &Runtime,
        endpoint: Arc<dyn Endpoint>,
        client: reqwest::Client,
    ) -> Result<(), WebhookStartError> {
        runtime.metrics().configure_webhook(endpoint.name());
        let enqueued = Arc::new(Notify::new());
        let cursor = enqueue::start(runtime.store().as_ref(), endpoint.as_ref())
            .await
            .map_err(|error| {
                WebhookStartError(format!("reading the cursor of {}: {error}", endpoint.name()))
            })?;
        let enqueuer = enqueue::Enqueuer {
            store: Arc::clone(runtime.store()),
            endpoint: Arc::clone(&endpoint),
            enqueued: Arc::clone(&enqueued),
            cursor,
        };
        let deliverer = deliver::Deliverer {
            store: Arc::clone(runtime.store()),
            endpoint,
            owner: runtime.replica_id().to_owned(),
            client,
            metrics: runtime.metrics().clone(),
            enqueued,
        };
        self.tasks.spawn(enqueuer.run());
        self.tasks.spawn(deliverer.run());
        Ok(())
    }
}

impl Default for WebhookTasks {
    fn default() -> Self {
        Self::new()
    }
}
