//! Webhooks: the run events pushed to endpoints the operator configured
//! (`[[webhooks]]`), in the Standard Webhooks format, at least once, in
//! order per run, through crashes and across replicas.
//!
//! The runtime's deliveries (`runtime/delivery/`) do the enqueuing,
//! sending and retrying; a webhook is one of their endpoints
//! (`endpoint.rs`). The request itself: `payload.rs` (type, id, body) and
//! `signature.rs`; the configuration: `config.rs`.

mod config;
mod endpoint;
mod payload;
mod signature;

use std::sync::Arc;

pub(crate) use config::Known;
pub use config::{Webhook, WebhookConfig, WebhookConfigError};
pub(crate) use endpoint::StandardWebhook;
pub(crate) use payload::{event_type, Payloads};

use crate::outbound::redirects::{within_origin, Follow};
use crate::runtime::{DeliveryStartError, DeliveryTasks, Runtime};

/// Starts delivering `webhooks` into `tasks`, as one of the replicas
/// sharing the store. Reads (or, for a webhook seen for the first time,
/// stores) each webhook's cursor before it returns: call it before serving
/// any request, so that a new webhook sends every event from then on.
pub async fn spawn(
    runtime: &Runtime,
    webhooks: &[Webhook],
    tasks: &mut DeliveryTasks,
) -> Result<(), DeliveryStartError> {
    if webhooks.is_empty() {
        return Ok(());
    }
    let payloads = Payloads::new().map_err(DeliveryStartError::new)?;
    // A webhook's URL is where it goes: a redirect is followed only
    // within its origin, and only one that keeps the signed body.
    let client = crate::http_client::builder()
        .redirect(within_origin(Follow::KeepingTheBody))
        .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| DeliveryStartError::new(format!("webhooks: building the HTTP client: {error}")))?;
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
        runtime.deliver(tasks, Arc::new(endpoint), client.clone()).await?;
    }
    Ok(())
}
