//! A webhook as an endpoint of the runtime's deliveries: an operator's
//! `[[webhooks]]` entry, each event it wants one delivery, each attempt a
//! request in the Standard Webhooks format, signed.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{HeaderValue, CONTENT_TYPE};

use super::payload::{message_id, Payloads};
use super::Webhook;
use crate::domain::{RunEvent, Tenant, Timestamp};
use crate::runtime::{ClaimedDelivery, Endpoint, LedgerReads, NewDelivery, RetrySchedule, RuntimeError};

/// A webhook of the operator's: the Standard Webhooks format, signed.
pub(crate) struct StandardWebhook {
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

    async fn deliveries(
        &self,
        _: &LedgerReads<'_>,
        events: &[RunEvent],
    ) -> Result<Vec<NewDelivery>, RuntimeError> {
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
        _: &LedgerReads<'_>,
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
