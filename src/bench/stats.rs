//! Latency histograms (microsecond resolution, HdrHistogram) and error
//! tallies, with the summaries the reports print.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use super::client::Failure;

/// Latencies from 1 µs to 10 minutes, 3 significant figures.
#[derive(Clone)]
pub(super) struct Latency(Histogram<u64>);

impl Default for Latency {
    fn default() -> Self {
        Self(Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds"))
    }
}

impl Latency {
    pub(super) fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.0.saturating_record(micros.max(1));
    }

    pub(super) fn add(&mut self, other: &Latency) {
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.0.add(&other.0);
    }

    pub(super) fn count(&self) -> u64 {
        self.0.len()
    }

    pub(super) fn summary(&self) -> LatencySummary {
        let ms = |micros: u64| micros as f64 / 1000.0;
        LatencySummary {
            count: self.0.len(),
            mean_ms: self.0.mean() / 1000.0,
            p50_ms: ms(self.0.value_at_quantile(0.50)),
            p90_ms: ms(self.0.value_at_quantile(0.90)),
            p99_ms: ms(self.0.value_at_quantile(0.99)),
            max_ms: ms(self.0.max()),
        }
    }
}

/// Percentiles in milliseconds (zero when nothing was recorded).
#[derive(Clone, Copy, Debug, Serialize)]
pub(super) struct LatencySummary {
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Failures counted by kind, with the first detail seen of each.
#[derive(Clone, Debug, Default, Serialize)]
pub(super) struct Errors {
    pub total: u64,
    pub by_kind: BTreeMap<String, ErrorKind>,
}

#[derive(Clone, Debug, Serialize)]
pub(super) struct ErrorKind {
    pub count: u64,
    pub example: String,
}

impl Errors {
    pub(super) fn record(&mut self, failure: Failure) {
        self.total += 1;
        self.by_kind
            .entry(failure.kind)
            .and_modify(|kind| kind.count += 1)
            .or_insert(ErrorKind {
                count: 1,
                example: failure.detail,
            });
    }

    pub(super) fn add(&mut self, other: Errors) {
        self.total += other.total;
        for (name, kind) in other.by_kind {
            self.by_kind
                .entry(name)
                .and_modify(|mine| mine.count += kind.count)
                .or_insert(kind);
        }
    }

    /// `0`, or the count with each kind, e.g. `3 (status Unavailable: 3)`.
    pub(super) fn describe(&self) -> String {
        if self.total == 0 {
            return "0".into();
        }
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(name, kind)| format!("{name}: {} (e.g. {})", kind.count, kind.example))
            .collect();
        format!("{} ({})", self.total, kinds.join("; "))
    }
}

/// Events per second.
pub(super) fn rate(count: u64, elapsed: Duration) -> f64 {
    if elapsed.is_zero() {
        0.0
    } else {
        count as f64 / elapsed.as_secs_f64()
    }
}
