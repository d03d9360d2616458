//! The webhook metrics: deliveries by outcome (delivered, or failed for
//! good), attempts by result, the pending deliveries in the store (a gauge
//! the metrics endpoint sets at each scrape, counted across every replica),
//! and the delivery latency, from the event to the endpoint's 2xx. Each is
//! labelled by webhook name.

use std::collections::BTreeMap;
use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

use super::counted::CountedGauge;
use super::register;

/// Seconds from an event to its delivery: a few milliseconds (an endpoint
/// that answers at once) up to a day of retries.
const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0,
    21600.0, 86400.0,
];

/// The `outcome` labels of `agentd_webhook_deliveries_total`.
const DELIVERED: &str = "delivered";
const FAILED: &str = "failed";
const OUTCOMES: [&str; 2] = [DELIVERED, FAILED];

/// How an attempt ended, as the `result` label of
/// `agentd_webhook_attempts_total` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// A 2xx answer.
    Success,
    /// Any other status.
    Status,
    /// No answer within the webhook's timeout.
    Timeout,
    /// No connection, or it broke.
    Connection,
}

impl AttemptResult {
    const ALL: [AttemptResult; 4] = [
        AttemptResult::Success,
        AttemptResult::Status,
        AttemptResult::Timeout,
        AttemptResult::Connection,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AttemptResult::Success => "success",
            AttemptResult::Status => "status",
            AttemptResult::Timeout => "timeout",
            AttemptResult::Connection => "connection",
        }
    }
}

pub(super) struct WebhookFamilies {
    deliveries: IntCounterVec,
    attempts: IntCounterVec,
    pending: CountedGauge,
    latency: HistogramVec,
}

impl WebhookFamilies {
    pub(super) fn new(registry: &Registry) -> Self {
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let family =
                IntCounterVec::new(Opts::new(name, help), labels).expect("a valid counter definition");
            register(registry, family)
        };
        let deliveries = counter(
            "agentd_webhook_deliveries_total",
            "Webhook deliveries finished, by webhook and outcome (delivered, or failed once its retries ran out).",
            &["webhook", "outcome"],
        );
        let attempts = counter(
            "agentd_webhook_attempts_total",
            "Webhook delivery attempts, by webhook and result (success, status, timeout, connection).",
            &["webhook", "result"],
        );
        let pending = IntGaugeVec::new(
            Opts::new(
                "agentd_webhook_pending_deliveries",
                "Webhook deliveries pending in the store now, by webhook.",
            ),
            &["webhook"],
        )
        .expect("a valid gauge definition");
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "agentd_webhook_delivery_latency_seconds",
                "From a run event to its webhook's 2xx answer, retries included.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            &["webhook"],
        )
        .expect("a valid histogram definition");
        Self {
            deliveries,
            attempts,
            pending: CountedGauge::new(register(registry, pending)),
            latency: register(registry, latency),
        }
    }
}

impl super::Metrics {
    /// `webhook` is configured: its series exist from now on, at zero.
    pub fn configure_webhook(&self, webhook: &str) {
        let families = &self.families.webhooks;
        for outcome in OUTCOMES {
            families.deliveries.with_label_values(&[webhook, outcome]);
        }
        for result in AttemptResult::ALL {
            families.attempts.with_label_values(&[webhook, result.as_str()]);
        }
        families.pending.configure(webhook);
        families.latency.with_label_values(&[webhook]);
    }

    /// An attempt at one of `webhook`'s deliveries ended with `result`.
    pub fn webhook_attempt(&self, webhook: &str, result: AttemptResult) {
        self.families
            .webhooks
            .attempts
            .with_label_values(&[webhook, result.as_str()])
            .inc();
    }

    /// One of `webhook`'s deliveries arrived, `latency` after its event.
    pub fn webhook_delivered(&self, webhook: &str, latency: Duration) {
        let families = &self.families.webhooks;
        families.deliveries.with_label_values(&[webhook, DELIVERED]).inc();
        families
            .latency
            .with_label_values(&[webhook])
            .observe(latency.as_secs_f64());
    }

    /// One of `webhook`'s deliveries failed for good.
    pub fn webhook_failed(&self, webhook: &str) {
        self.families
            .webhooks
            .deliveries
            .with_label_values(&[webhook, FAILED])
            .inc();
    }

    /// Sets the pending-deliveries gauge to what the store holds: `counts`
    /// by webhook; webhooks missing from it have none (configured ones
    /// show 0).
    pub fn set_pending_deliveries(&self, counts: &BTreeMap<String, u64>) {
        self.families.webhooks.pending.set(counts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Format, Metrics};

    #[test]
    fn webhook_metrics_render_by_webhook() {
        let metrics = Metrics::new();
        metrics.webhook_attempt("ops", AttemptResult::Status);
        metrics.webhook_attempt("ops", AttemptResult::Success);
        metrics.webhook_delivered("ops", Duration::from_millis(30));
        metrics.webhook_failed("ops");
        metrics.set_pending_deliveries(&BTreeMap::from([("ops".to_owned(), 4)]));
        let text = metrics.render(Format::Prometheus).expect("render");
        for line in [
            "agentd_webhook_attempts_total{result=\"status\",webhook=\"ops\"} 1",
            "agentd_webhook_attempts_total{result=\"success\",webhook=\"ops\"} 1",
            "agentd_webhook_deliveries_total{outcome=\"delivered\",webhook=\"ops\"} 1",
            "agentd_webhook_deliveries_total{outcome=\"failed\",webhook=\"ops\"} 1",
            "agentd_webhook_pending_deliveries{webhook=\"ops\"} 4",
            "agentd_webhook_delivery_latency_seconds_count{webhook=\"ops\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        metrics.set_pending_deliveries(&BTreeMap::new());
        let text = metrics.render(Format::Prometheus).expect("render");
        assert!(!text.contains("agentd_webhook_pending_deliveries{"), "{text}");
    }

    #[test]
    fn a_configured_webhook_shows_every_series_at_zero() {
        let metrics = Metrics::new();
        metrics.configure_webhook("ops");
        metrics.set_pending_deliveries(&BTreeMap::new());
        let text = metrics.render(Format::Prometheus).expect("render");
        for line in [
            "agentd_webhook_attempts_total{result=\"connection\",webhook=\"ops\"} 0",
            "agentd_webhook_deliveries_total{outcome=\"failed\",webhook=\"ops\"} 0",
            "agentd_webhook_pending_deliveries{webhook=\"ops\"} 0",
            "agentd_webhook_delivery_latency_seconds_count{webhook=\"ops\"} 0",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
    }
}
