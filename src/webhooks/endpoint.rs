//! What a delivery ledger delivers to: an [`Endpoint`] names its ledger,
//! turns run events into deliveries and makes each attempt's request; the
//! enqueuer and the deliverer do the rest (cursor, leases, retries, order
//! per run) the same for every endpoint. [`StandardWebhook`] is an
//! operator's `[[webhooks]]` entry; the A2A push endpoint is in `a2a/push/`.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, CONTENT_TYPE};

use super::payload::{message_id, Payloads};
use super::{RetrySchedule, Webhook};
use crate::domain::{RunEvent, Tenant, Timestamp};
use crate::store::{ClaimedDelivery, NewDelivery, Store, StoreError};

/// Where a ledger's deliveries go.
#[async_trait]
pub trait Endpoint: Send + Sync + 'static {
    /// The ledger's name (its cursor's and its deliveries'), in logs and
    /// metrics too.
    fn name(&self) -> &str;
    /// Only this tenant's run events are read (`None`: every tenant's).
    fn tenant(&self) -> Option<&Tenant>;
    /// How long one attempt may take.
    fn timeout(&self) -> Duration;
    /// Attempts in flight at once, per replica.
    fn concurrency(&self) -> usize;
    fn retry(&self) -> &RetrySchedule;
    /// The deliveries `events` (in position order) make.
    async fn deliveries(
        &self,
        store: &dyn Store,
        events: &[RunEvent],
    ) -> Result<Vec<NewDelivery>, StoreError>;
    /// The request of one attempt at `delivery` (the deliverer sets its
    /// timeout and sends it); `Err` names why none can be made, and the
    /// attempt fails.
    async fn request(
        &self,
        client: &reqwest::Client,
        store: &dyn Store,
        delivery: &ClaimedDelivery,
    ) -> Result<reqwest::RequestBuilder, String>;
}

/// A webhook of the operator's: the Standard Webhooks format, signed.
pub struct StandardWebhook {
    pub webhook: Webhook,
    pub payloads: Payloads,
}

#[async_trait]
impl Endpoint for StandardWebhook {
    fn name(&self) -> &str {
        &self.webhook.name
    }

    fn tenant(&self) -> Option<&Tenant> {
        self.webhook.tenant.as_ref()
    }

    fn timeout(&self) -> Duration {
        self.webhook.timeout
    }

    fn concurrency(&self) -> usize {
        self.webhook.concurrency
    }

    fn retry(&self) -> &RetrySchedule {
        &self.webhook.retry
    }

    async fn deliveries(&self, _: &dyn Store, events: &[RunEvent]) -> Result<Vec<NewDelivery>, StoreError> {
        Ok(events
            .iter()
            .filter(|event| self.webhook.wants(event))
            .map(|event| NewDelivery {
                run_id: event.run_id,
                event: event.position,
                target: String::new(),
            })
            .collect())
    }

    async fn request(
        &self,
        client: &reqwest::Client,
        _: &dyn Store,
        delivery: &ClaimedDelivery,
    ) -> Result<reqwest::RequestBuilder, String> {
        let body = self.payloads.body(&delivery.event)?;
        let id = message_id(&delivery.event);
        let timestamp = Timestamp::now().0.div_euclid(1_000_000);
        let signature = self.webhook.secret.sign(&id, timestamp, &body)?;
        let mut signature = HeaderValue::from_str(&signature).map_err(|e| e.to_string())?;
        signature.set_sensitive(true);
        Ok(client
            .post(self.webhook.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header("webhook-id", &id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body))
    }
}
