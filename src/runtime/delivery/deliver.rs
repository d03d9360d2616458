//! A ledger's deliverer: claims due deliveries from the store (each for
//! one attempt, leased to this replica), sends each as its endpoint's
//! request on a task of its own, at most `concurrency` at once, and records how each
//! attempt ended: delivered on a 2xx, else due again after the retry
//! schedule's next delay, or failed for good once the schedule is over.
//! Runs never wait for it: it only reads the run events and writes the
//! ledger. It wakes when deliveries are enqueued here, when an attempt
//! ends, when the next one is due, and (on a shared store, where another
//! replica may enqueue) every second.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderValue, RETRY_AFTER};
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::enqueue::sleep;
use super::{Endpoint, ReadTables};
use crate::domain::Timestamp;
use crate::metrics::{AttemptResult, Metrics};
use crate::store::{AttemptOutcome, Claim, ClaimedDelivery, DeliveryLedger};

/// How often a shared store is asked for due deliveries without a wake.
const RECHECK: Duration = Duration::from_secs(1);
/// The shortest wait after a claim that found nothing although something
/// was due (rows another replica was claiming at that moment).
const MIN_WAIT: Duration = Duration::from_millis(20);
/// How long a failed store call waits before the next.
const STORE_RETRY: Duration = Duration::from_secs(1);
/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// What every attempt of one endpoint shares.
pub(super) struct Deliverer {
    /// Where deliveries are claimed and their outcomes recorded.
    pub(super) ledger: Arc<dyn DeliveryLedger>,
    /// What the endpoint reads to make its requests.
    pub(super) reads: ReadTables,
    /// Whether other servers share the store (and may enqueue).
    pub(super) shared: bool,
    pub(super) endpoint: Arc<dyn Endpoint>,
    pub(super) owner: String,
    pub(super) client: reqwest::Client,
    pub(super) metrics: Metrics,
    /// Told when deliveries were enqueued here.
    pub(super) enqueued: Arc<Notify>,
}

/// Why an attempt failed.
struct Failure {
    result: AttemptResult,
    error: String,
    retry_after: Option<Duration>,
}

impl Deliverer {
    /// How long a claim holds a delivery: the attempt's timeout, and as
    /// long again (at least a second) to record its outcome.
    fn lease(&self) -> Duration {
        self.endpoint.timeout() + self.endpoint.timeout().max(Duration::from_secs(1))
    }

    pub(super) async fn run(self) {
        let this = Arc::new(self);
        let shared = this.shared;
        let mut attempts = JoinSet::new();
        loop {
            let free = this.endpoint.concurrency().saturating_sub(attempts.len());
            let mut wait = if shared { RECHECK } else { Duration::MAX };
            if free > 0 {
                let now = Timestamp::now();
                let claim = this
                    .ledger
                    .claim_deliveries(
                        this.endpoint.name(),
                        &Claim {
                            owner: &this.owner,
                            now,
                            lease_until: now.after(this.lease()),
                            limit: free,
                        },
                    )
                    .await;
                match claim {
                    Ok(claim) => {
                        let claimed = !claim.deliveries.is_empty();
                        for delivery in claim.deliveries {
                            attempts.spawn(Arc::clone(&this).attempt(delivery));
                        }
                        if let Some(due) = claim.next_due {
                            let until = Duration::from_micros(u64::try_from(due.0 - now.0).unwrap_or(0));
                            let until = if claimed { until } else { until.max(MIN_WAIT) };
                            wait = wait.min(until);
                        }
                    }
                    Err(error) => {
                        tracing::warn!(webhook = %this.endpoint.name(), %error, "webhook: could not claim deliveries");
                        wait = STORE_RETRY;
                    }
                }
            }
            tokio::select! {
                () = this.enqueued.notified() => {}
                Some(_) = attempts.join_next(), if !attempts.is_empty() => {}
                () = sleep(wait) => {}
            }
        }
    }

    /// One attempt at `delivery`, and its outcome recorded.
    async fn attempt(self: Arc<Self>, delivery: ClaimedDelivery) {
        let name = self.endpoint.name();
        let sent = self.send(&delivery).await;
        let now = Timestamp::now();
        let outcome = match &sent {
            Ok(()) => AttemptOutcome::Delivered,
            Err(failure) => {
                let next = self.endpoint.retry().next_attempt(
                    delivery.attempt,
                    delivery.enqueued_at,
                    now,
                    failure.retry_after,
                    fastrand::f64(),
                );
                let error = failure.error.clone();
                match next {
                    Some(at) => AttemptOutcome::Retry { at, error },
                    None => AttemptOutcome::Failed { error },
                }
            }
        };
        self.metrics.webhook_attempt(
            name,
            sent.as_ref()
                .map_or_else(|failure| failure.result, |()| AttemptResult::Success),
        );
        let (run_id, event) = (delivery.event.run_id, delivery.event.position);
        match self
            .ledger
            .finish_delivery(delivery.id, delivery.attempt, &outcome, now)
            .await
        {
            Ok(true) => match &outcome {
                AttemptOutcome::Delivered => {
                    let latency =
                        Duration::from_micros(u64::try_from(now.0 - delivery.event.time.0).unwrap_or(0));
                    self.metrics.webhook_delivered(name, latency);
                    tracing::debug!(webhook = %name, %run_id, event = ?event, attempt = delivery.attempt, "webhook delivered");
                }
                AttemptOutcome::Retry { error, .. } => tracing::info!(
                    webhook = %name, %run_id, event = ?event, attempt = delivery.attempt, %error,
                    "webhook delivery failed; it will be retried"
                ),
                AttemptOutcome::Failed { error } => {
                    self.metrics.webhook_failed(name);
                    tracing::warn!(
                        webhook = %name, %run_id, event = ?event, attempts = delivery.attempt, %error,
                        "webhook delivery failed for good: its retry schedule is over"
                    );
                }
            },
            // Its lease ran out and a later attempt holds it, or its run
            // went: that attempt's outcome stands.
            Ok(false) => {
                tracing::debug!(webhook = %name, %run_id, event = ?event, "webhook attempt superseded")
            }
            // The lease runs out and the delivery is attempted again.
            Err(error) => tracing::warn!(
                webhook = %name, %run_id, event = ?event, %error,
                "webhook: could not record an attempt's outcome; the delivery will be attempted again"
            ),
        }
    }

    /// Sends `delivery` once: `Ok` on a 2xx answer.
    async fn send(&self, delivery: &ClaimedDelivery) -> Result<(), Failure> {
        let reads = self.reads.reads();
        let request = self
            .endpoint
            .request(&self.client, &reads, delivery)
            .await
            .map_err(|error| Failure {
                result: AttemptResult::Connection,
                error,
                retry_after: None,
            })?;
        let response = request
            .timeout(self.endpoint.timeout())
            .send()
            .await
            .map_err(|error| self.transport_failure(error))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        Err(Failure {
            result: AttemptResult::Status,
            error: format!(
                "{} answered HTTP {status} to run.{}",
                self.endpoint.name(),
                delivery.event.kind.as_str()
            ),
            retry_after: response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| retry_after(value, std::time::SystemTime::now())),
        })
    }

    /// The failure of a request that got no answer. The URL is left out
    /// of the text (it may hold a token, and the text is logged and
    /// stored).
    fn transport_failure(&self, error: reqwest::Error) -> Failure {
        let error = error.without_url();
        let (result, error) = if error.is_timeout() {
            (
                AttemptResult::Timeout,
                format!(
                    "no answer within {}",
                    crate::config::duration::short(self.endpoint.timeout())
                ),
            )
        } else {
            // The source chain names the cause (refused, reset, TLS).
            let mut text = error.to_string();
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            (AttemptResult::Connection, text)
        };
        Failure {
            result,
            error,
            retry_after: None,
        }
    }
}

/// A `Retry-After` value (seconds, or an HTTP date) as a delay from `now`.
fn retry_after(value: &HeaderValue, now: std::time::SystemTime) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    let delay = match text.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => httpdate::parse_http_date(text)
            .ok()?
            .duration_since(now)
            .unwrap_or_default(),
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_or_a_date() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let seconds = HeaderValue::from_static("120");
        assert_eq!(retry_after(&seconds, now), Some(Duration::from_secs(120)));
        let date = HeaderValue::from_str(&httpdate::fmt_http_date(now + Duration::from_secs(30))).unwrap();
        assert_eq!(retry_after(&date, now), Some(Duration::from_secs(30)));
        let past = HeaderValue::from_str(&httpdate::fmt_http_date(now - Duration::from_secs(30))).unwrap();
        assert_eq!(retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(retry_after(&HeaderValue::from_static("soon"), now), None);
        let huge = HeaderValue::from_static("99999999999");
        assert_eq!(retry_after(&huge, now), Some(MAX_RETRY_AFTER));
    }
}
