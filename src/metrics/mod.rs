//! Prometheus metrics of a runtime: what happened to runs (counters by
//! agent), refused Resumes (by reason), what is going on now (suspended runs,
//! open streams) and how long things take (histograms). One [`Metrics`]
//! handle per runtime, with a registry of its own, so that several servers
//! in one process never share counts. Recording never fails and never
//! blocks. The metrics know nothing of the runtime that records into them:
//! the server's metrics endpoint (`server/metrics_endpoint/`) serves the
//! text format, and sets the suspended-runs gauge from the store at each
//! scrape.

mod stream;
mod webhooks;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

pub use stream::{MeasuredStream, Rpc};
pub use webhooks::AttemptResult;

use crate::domain::Timestamp;

/// The metrics of one runtime. Cloning shares them.
#[derive(Clone)]
pub struct Metrics {
    families: Arc<Families>,
}

struct Families {
    registry: Registry,
    runs_started: IntCounterVec,
    runs_suspended: IntCounterVec,
    runs_resumed: IntCounterVec,
    runs_completed: IntCounterVec,
    runs_failed: IntCounterVec,
    runs_cancelled: IntCounterVec,
    runs_expired: IntCounterVec,
    takeovers: IntCounterVec,
    resume_rejections: IntCounterVec,
    suspended_runs: IntGaugeVec,
    active_streams: IntGaugeVec,
    first_chunk: HistogramVec,
    model_step: HistogramVec,
    store_operation: HistogramVec,
    suspension: HistogramVec,
    webhooks: webhooks::WebhookFamilies,
}

/// Seconds from a request to its stream's first chunk.
const FIRST_CHUNK_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];
/// Seconds of an agent step (a model response and the tools it called).
const STEP_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
];
/// Seconds of one store operation.
const STORE_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0,
];
/// Seconds a run waited for an answer: a second up to a week.
const SUSPENSION_BUCKETS: &[f64] = &[
    1.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 14400.0, 86400.0, 259200.0, 604800.0,
];

fn counter(registry: &Registry, name: &str, help: &str, label: &str) -> IntCounterVec {
    let family = IntCounterVec::new(Opts::new(name, help), &[label]).expect("a valid counter definition");
    registry
        .register(Box::new(family.clone()))
        .expect("metric names are unique within the registry");
    family
}

fn gauge(registry: &Registry, name: &str, help: &str, label: &str) -> IntGaugeVec {
    let family = IntGaugeVec::new(Opts::new(name, help), &[label]).expect("a valid gauge definition");
    registry
        .register(Box::new(family.clone()))
        .expect("metric names are unique within the registry");
    family
}

fn histogram(registry: &Registry, name: &str, help: &str, label: &str, buckets: &[f64]) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    let family = HistogramVec::new(opts, &[label]).expect("a valid histogram definition");
    registry
        .register(Box::new(family.clone()))
        .expect("metric names are unique within the registry");
    family
}

impl Metrics {
    /// Fresh metrics, every count at zero.
    pub fn new() -> Self {
        let r = Registry::new();
        let families = Families {
            runs_started: counter(&r, "agentd_runs_started_total", "Runs started.", "agent"),
            runs_suspended: counter(
                &r,
                "agentd_runs_suspended_total",
                "Times a run suspended to wait for an answer or an approval.",
                "agent",
            ),
            runs_resumed: counter(
                &r,
                "agentd_runs_resumed_total",
                "Accepted Resumes (a suspended call answered).",
                "agent",
            ),
            runs_completed: counter(&r, "agentd_runs_completed_total", "Runs completed.", "agent"),
            runs_failed: counter(&r, "agentd_runs_failed_total", "Runs failed.", "agent"),
            runs_cancelled: counter(&r, "agentd_runs_cancelled_total", "Runs cancelled.", "agent"),
            runs_expired: counter(
                &r,
                "agentd_runs_expired_total",
                "Suspended runs that expired unanswered.",
                "agent",
            ),
            takeovers: counter(
                &r,
                "agentd_run_takeovers_total",
                "Running runs this replica took over, by what was known of their previous holder: \
                 gone (its store session ended), live (its session lived but its lease expired), \
                 unknown (only its lease expired).",
                "holder",
            ),
            resume_rejections: counter(
                &r,
                "agentd_resume_rejections_total",
                "Resumes refused, by reason; the run stays as it was.",
                "reason",
            ),
            suspended_runs: gauge(
                &r,
                "agentd_suspended_runs",
                "Runs in the store suspended now, by agent.",
                "agent",
            ),
            active_streams: gauge(
                &r,
                "agentd_active_streams",
                "Chunk streams open now, by RPC.",
                "rpc",
            ),
            first_chunk: histogram(
                &r,
                "agentd_time_to_first_chunk_seconds",
                "From a streaming request to its first chunk.",
                "rpc",
                FIRST_CHUNK_BUCKETS,
            ),
            model_step: histogram(
                &r,
                "agentd_model_step_duration_seconds",
                "One agent step: the model's response and the tool calls it made.",
                "agent",
                STEP_BUCKETS,
            ),
            store_operation: histogram(
                &r,
                "agentd_store_operation_duration_seconds",
                "One run store operation, by operation.",
                "operation",
                STORE_BUCKETS,
            ),
            suspension: histogram(
                &r,
                "agentd_suspension_duration_seconds",
                "How long a run stayed suspended before it was resumed, cancelled or expired.",
                "agent",
                SUSPENSION_BUCKETS,
            ),
            webhooks: webhooks::WebhookFamilies::new(&r),
            registry: r,
        };
        Self {
            families: Arc::new(families),
        }
    }

    pub fn run_started(&self, agent: &str) {
        self.families.runs_started.with_label_values(&[agent]).inc();
    }

    /// A run's suspension was stored.
    pub fn run_suspended(&self, agent: &str) {
        self.families.runs_suspended.with_label_values(&[agent]).inc();
    }

    /// A Resume claimed the suspension that began at `since`.
    pub fn run_resumed(&self, agent: &str, since: Timestamp) {
        self.families.runs_resumed.with_label_values(&[agent]).inc();
        self.left_suspension(agent, since);
    }

    pub fn run_completed(&self, agent: &str) {
        self.families.runs_completed.with_label_values(&[agent]).inc();
    }

    pub fn run_failed(&self, agent: &str) {
        self.families.runs_failed.with_label_values(&[agent]).inc();
    }

    /// A run was cancelled; `suspended_since` when it was suspended then.
    pub fn run_cancelled(&self, agent: &str, suspended_since: Option<Timestamp>) {
        self.families.runs_cancelled.with_label_values(&[agent]).inc();
        if let Some(since) = suspended_since {
            self.left_suspension(agent, since);
        }
    }

    /// The suspension that began at `since` expired.
    pub fn run_expired(&self, agent: &str, since: Timestamp) {
        self.families.runs_expired.with_label_values(&[agent]).inc();
        self.left_suspension(agent, since);
    }

    /// This replica took over a run whose previous holder was `holder`
    /// (gone, live or unknown).
    pub fn run_taken_over(&self, holder: &str) {
        self.families.takeovers.with_label_values(&[holder]).inc();
    }

    fn left_suspension(&self, agent: &str, since: Timestamp) {
        let waited = Timestamp::now().0.saturating_sub(since.0).max(0) as f64 / 1e6;
        self.families
            .suspension
            .with_label_values(&[agent])
            .observe(waited);
    }

    /// A Resume was refused for `reason`.
    pub fn resume_rejected(&self, reason: ResumeRejection) {
        self.families
            .resume_rejections
            .with_label_values(&[reason.as_str()])
            .inc();
    }

    /// Sets the suspended-runs gauge to what the store holds: `counts` by
    /// agent; agents missing from it have none.
    pub fn set_suspended_runs(&self, counts: &BTreeMap<String, u64>) {
        let gauge = &self.families.suspended_runs;
        gauge.reset();
        for (agent, count) in counts {
            gauge
                .with_label_values(&[agent.as_str()])
                .set(i64::try_from(*count).unwrap_or(i64::MAX));
        }
    }

    pub fn model_step(&self, agent: &str, took: Duration) {
        self.families
            .model_step
            .with_label_values(&[agent])
            .observe(took.as_secs_f64());
    }

    pub(crate) fn store_operation(&self, operation: &str, took: Duration) {
        self.families
            .store_operation
            .with_label_values(&[operation])
            .observe(took.as_secs_f64());
    }

    /// Every metric in the Prometheus text format.
    pub fn render(&self) -> Result<String, prometheus::Error> {
        let mut text = Vec::new();
        TextEncoder::new().encode(&self.families.registry.gather(), &mut text)?;
        String::from_utf8(text).map_err(|e| prometheus::Error::Msg(e.to_string()))
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Metrics")
    }
}

/// Why a Resume was refused, as the `reason` label of
/// `agentd_resume_rejections_total` names it. Refusals that are not the
/// answer's fault (the store failed, the run kept changing) have none and
/// are not counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeRejection {
    InvalidAnswer,
    InvalidRequest,
    NotSuspended,
    ToolCallNotPending,
    ToolCallAmbiguous,
    ResumeConflict,
    RequestIdReused,
    RunNotFound,
    AgentGone,
    /// A refusal a Resume cannot meet today; counted rather than lost.
    Other,
}

impl ResumeRejection {
    pub fn as_str(self) -> &'static str {
        match self {
            ResumeRejection::InvalidAnswer => "invalid_answer",
            ResumeRejection::InvalidRequest => "invalid_request",
            ResumeRejection::NotSuspended => "not_suspended",
            ResumeRejection::ToolCallNotPending => "tool_call_not_pending",
            ResumeRejection::ToolCallAmbiguous => "tool_call_ambiguous",
            ResumeRejection::ResumeConflict => "resume_conflict",
            ResumeRejection::RequestIdReused => "request_id_reused",
            ResumeRejection::RunNotFound => "run_not_found",
            ResumeRejection::AgentGone => "agent_gone",
            ResumeRejection::Other => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_sets_the_gauge_to_the_store_count() {
        let metrics = Metrics::new();
        metrics.run_started("a");
        metrics.run_suspended("a");
        metrics.resume_rejected(ResumeRejection::NotSuspended);
        let text = metrics.render().expect("render");
        assert!(
            text.contains("agentd_runs_started_total{agent=\"a\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("agentd_runs_suspended_total{agent=\"a\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("agentd_resume_rejections_total{reason=\"not_suspended\"} 1"),
            "{text}"
        );
        assert!(!text.contains("reason=\"other\""), "{text}");

        metrics.set_suspended_runs(&BTreeMap::from([("a".to_owned(), 2)]));
        metrics.set_suspended_runs(&BTreeMap::from([("b".to_owned(), 3)]));
        let text = metrics.render().expect("render");
        assert!(!text.contains("agentd_suspended_runs{agent=\"a\"}"), "{text}");
        assert!(text.contains("agentd_suspended_runs{agent=\"b\"} 3"), "{text}");
    }
}
