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
mod enqueue;
mod payload;
mod schedule;
mod signature;

use std::sync::Arc;

use tokio::sync::Notify;
use tokio::task::JoinSet;

pub use config::{Known, Webhook, WebhookConfig, WebhookConfigError, DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT};
pub use payload::{event_type, message_id, parse_event_type, Payloads};
pub use schedule::RetrySchedule;
pub use signature::{Secret, SECRET_PREFIX};

use crate::runtime::Runtime;

/// The tasks that deliver a server's webhooks; dropping this stops them
/// (attempts in flight are abandoned, and their leases run out for a
/// later attempt).
pub struct WebhookTasks {
    _tasks: JoinSet<()>,
}

/// Why webhooks could not start.
#[derive(Debug, thiserror::Error)]
#[error("webhooks: {0}")]
pub struct WebhookStartError(String);

/// Starts delivering `webhooks` from `runtime`'s store, as one of the
/// replicas sharing it. Reads (or, for a webhook seen for the first time,
/// stores) each webhook's cursor before it returns: call it before serving
/// any request, so that a new webhook sends every event from then on.
pub async fn spawn(runtime: &Runtime, webhooks: &[Webhook]) -> Result<WebhookTasks, WebhookStartError> {
    let mut tasks = JoinSet::new();
    if webhooks.is_empty() {
        return Ok(WebhookTasks { _tasks: tasks });
    }
    let payloads = Payloads::new().map_err(WebhookStartError)?;
    // Redirects are not followed: a webhook's URL is where it goes.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| WebhookStartError(format!("building the HTTP client: {error}")))?;
    for webhook in webhooks {
        let webhook = Arc::new(webhook.clone());
        runtime.metrics().configure_webhook(&webhook.name);
        let enqueued = Arc::new(Notify::new());
        let cursor = enqueue::start(runtime.store().as_ref(), &webhook)
            .await
            .map_err(|error| WebhookStartError(format!("reading the cursor of {}: {error}", webhook.name)))?;
        let enqueuer = enqueue::Enqueuer {
            store: Arc::clone(runtime.store()),
            webhook: Arc::clone(&webhook),
            enqueued: Arc::clone(&enqueued),
            cursor,
        };
        let deliverer = deliver::Deliverer {
            store: Arc::clone(runtime.store()),
            webhook: Arc::clone(&webhook),
            owner: runtime.replica_id().to_owned(),
            client: client.clone(),
            payloads: payloads.clone(),
            metrics: runtime.metrics().clone(),
            enqueued,
        };
        tasks.spawn(enqueuer.run());
        tasks.spawn(deliverer.run());
        tracing::info!(
            webhook = %webhook.name,
            events = ?webhook.events.iter().map(|kind| event_type(*kind)).collect::<Vec<_>>(),
            "delivering webhook"
        );
    }
    Ok(WebhookTasks { _tasks: tasks })
}
