//! The metrics endpoint: what a scrape answers (every metric of a runtime,
//! the suspended-runs gauge counted from the store then) and, in
//! `routes.rs`, the HTTP server that answers it on a listener of its own.
//! It lives beside the server, not in `crate::metrics`, because a scrape
//! reads the runtime while the runtime records into the metrics:
//! the metrics know nothing of the runtime. It never changes a run.

mod accept;
mod routes;

use std::time::Duration;

pub use routes::serve_http;

use crate::metrics::Format;
use crate::runtime::Runtime;

/// How long a scrape waits for the store's count of suspended runs.
const COUNT_TIMEOUT: Duration = Duration::from_secs(2);

/// Every metric of `runtime` in `format`, with the suspended-runs gauge
/// counted from the store now, so that it is right after a restart and counts what every replica sharing the store did. If
/// the store does not answer in time, the gauge keeps its last value (and
/// the health check reports the store).
pub async fn scrape(runtime: &Runtime, format: Format) -> Result<String, prometheus::Error> {
    let count = runtime.suspended_runs_by_agent();
    match tokio::time::timeout(COUNT_TIMEOUT, count).await {
        Ok(Ok(counts)) => runtime.metrics().set_suspended_runs(&counts),
        Ok(Err(error)) => tracing::warn!(%error, "metrics: could not count the suspended runs"),
        Err(_) => tracing::warn!("metrics: counting the suspended runs timed out"),
    }
    let pending = runtime.pending_deliveries();
    match tokio::time::timeout(COUNT_TIMEOUT, pending).await {
        Ok(Ok(counts)) => runtime.metrics().set_pending_deliveries(&counts),
        Ok(Err(error)) => tracing::warn!(%error, "metrics: could not count the pending webhook deliveries"),
        Err(_) => tracing::warn!("metrics: counting the pending webhook deliveries timed out"),
    }
    runtime.metrics().render(format)
}
