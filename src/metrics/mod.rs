//! Prometheus metrics of a runtime: what happened to runs (counters by
//! agent), refused Resumes (by reason), what is going on now (suspended runs,
//! open streams) and how long things take (histograms); the gRPC server's
//! calls (`grpc.rs`), the HTTP surfaces' requests and streams (`http.rs`),
//! the webhooks' deliveries (`webhooks.rs`) and the
//! process's resources (`process_*`, on Linux). One [`Metrics`] handle per
//! runtime, with a registry of its own, so that several servers in one
//! process never share counts. Every series whose labels are known (each
//! configured agent and webhook, each rejection reason, each streaming RPC,
//! each gRPC method) exists from the start, at zero. Recording never fails
//! and never blocks. The metrics know nothing of the runtime that records
//! into them: the server's metrics endpoint (`server/metrics_endpoint/`)
//! serves them, in the Prometheus or the OpenMetrics text format, and sets
//! the store's counts at each scrape.

mod counted;
mod grpc;
mod http;
mod openmetrics;
mod stream;
mod webhooks;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use prometheus::core::Collector;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry, TextEncoder,
};

pub(crate) use grpc::{GrpcMethodMetrics, GrpcType};
pub(crate) use http::{HttpSurface, HttpSurfaceMetrics};
pub(crate) use stream::Rpc;
pub(crate) use webhooks::AttemptResult;

use crate::domain::Timestamp;

/// A text format the metrics render in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format, version 0.0.4.
    Prometheus,
    /// OpenMetrics 1.0.0.
    OpenMetrics,
}

impl Format {
    /// The `Content-Type` of a rendering in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => openmetrics::CONTENT_TYPE,
        }
    }
}

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
    reminders: IntCounterVec,
    takeovers: IntCounterVec,
    resume_rejections: IntCounterVec,
    suspended_runs: counted::CountedGauge,
    active_streams: IntGaugeVec,
    first_chunk: HistogramVec,
    model_step: HistogramVec,
    store_operation: HistogramVec,
    suspension: HistogramVec,
    webhooks: webhooks::WebhookFamilies,
    grpc: grpc::GrpcFamilies,
    http: http::HttpFamilies,
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

/// Registers `collector` in `registry` and gives it back.
fn register<C: Collector + Clone + 'static>(registry: &Registry, collector: C) -> C {
    registry
        .register(Box::new(collector.clone()))
        .expect("metric names are unique within the registry");
    collector
}

fn counter(registry: &Registry, name: &str, help: &str, label: &str) -> IntCounterVec {
    let family = IntCounterVec::new(Opts::new(name, help), &[label]).expect("a valid counter definition");
    register(registry, family)
}

fn gauge(registry: &Registry, name: &str, help: &str, label: &str) -> IntGaugeVec {
    let family = IntGaugeVec::new(Opts::new(name, help), &[label]).expect("a valid gauge definition");
    register(registry, family)
}

fn histogram(registry: &Registry, name: &str, help: &str, label: &str, buckets: &[f64]) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    let family = HistogramVec::new(opts, &[label]).expect("a valid histogram definition");
    register(registry, family)
}

/// The process's CPU time, memory, file descriptors, threads and start
/// time, read from `/proc` at each scrape.
#[cfg(target_os = "linux")]
fn register_process_metrics(registry: &Registry) {
    let process = prometheus::process_collector::ProcessCollector::for_self();
    registry
        .register(Box::new(process))
        .expect("metric names are unique within the registry");
}

/// Elsewhere there is no `/proc` to read.
#[cfg(not(target_os = "linux"))]
fn register_process_metrics(_: &Registry) {}

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
                "Suspensions answered and continued: accepted Resumes, and deadlines whose on_expiry \
                 declined or approved the calls.",
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
            reminders: counter(
                &r,
                "agentd_reminders_total",
                "Reminders of suspended runs still waiting (run events of kind reminded).",
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
            suspended_runs: counted::CountedGauge::new(gauge(
                &r,
                "agentd_suspended_runs",
                "Runs in the store suspended now, by agent.",
                "agent",
            )),
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
            grpc: grpc::GrpcFamilies::new(&r),
            http: http::HttpFamilies::new(&r),
            registry: r,
        };
        register_process_metrics(&families.registry);
        let metrics = Self {
            families: Arc::new(families),
        };
        metrics.start_known_series();
        metrics
    }

    /// The series whose labels are fixed: each rejection reason, each kind
    /// of takeover, each streaming RPC.
    fn start_known_series(&self) {
        let families = &self.families;
        for reason in ResumeRejection::ALL {
            families.resume_rejections.with_label_values(&[reason.as_str()]);
        }
        for holder in crate::store::Holder::NAMES {
            families.takeovers.with_label_values(&[holder]);
        }
        for rpc in Rpc::ALL {
            families.active_streams.with_label_values(&[rpc.as_str()]);
            if rpc.has_first_chunk_latency() {
                families.first_chunk.with_label_values(&[rpc.as_str()]);
            }
        }
    }

    /// `agent` is served: its series exist from now on, at zero.
    pub fn configure_agent(&self, agent: &str) {
        let families = &self.families;
        for counter in [
            &families.runs_started,
            &families.runs_suspended,
            &families.runs_resumed,
            &families.runs_completed,
            &families.runs_failed,
            &families.runs_cancelled,
            &families.runs_expired,
            &families.reminders,
        ] {
            counter.with_label_values(&[agent]);
        }
        families.suspended_runs.configure(agent);
        families.model_step.with_label_values(&[agent]);
        families.suspension.with_label_values(&[agent]);
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

    /// A suspended run's reminder was stored.
    pub fn reminder_sent(&self, agent: &str) {
        self.families.reminders.with_label_values(&[agent]).inc();
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
    /// agent; agents missing from it have none (configured ones show 0).
    pub fn set_suspended_runs(&self, counts: &BTreeMap<String, u64>) {
        self.families.suspended_runs.set(counts);
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

    /// Every metric, in `format`.
    pub fn render(&self, format: Format) -> Result<String, prometheus::Error> {
        let families = self.families.registry.gather();
        match format {
            Format::Prometheus => {
                let mut text = Vec::new();
                TextEncoder::new().encode(&families, &mut text)?;
                String::from_utf8(text).map_err(|e| prometheus::Error::Msg(e.to_string()))
            }
            Format::OpenMetrics => Ok(openmetrics::encode(&families)),
        }
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
    /// Every reason, each a series from the start.
    pub const ALL: [ResumeRejection; 10] = [
        ResumeRejection::InvalidAnswer,
        ResumeRejection::InvalidRequest,
        ResumeRejection::NotSuspended,
        ResumeRejection::ToolCallNotPending,
        ResumeRejection::ToolCallAmbiguous,
        ResumeRejection::ResumeConflict,
        ResumeRejection::RequestIdReused,
        ResumeRejection::RunNotFound,
        ResumeRejection::AgentGone,
        ResumeRejection::Other,
    ];

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
        let text = metrics.render(Format::Prometheus).expect("render");
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
        assert!(
            text.contains("agentd_resume_rejections_total{reason=\"other\"} 0"),
            "{text}"
        );

        metrics.set_suspended_runs(&BTreeMap::from([("a".to_owned(), 2)]));
        metrics.set_suspended_runs(&BTreeMap::from([("b".to_owned(), 3)]));
        let text = metrics.render(Format::Prometheus).expect("render");
        assert!(!text.contains("agentd_suspended_runs{agent=\"a\"}"), "{text}");
        assert!(text.contains("agentd_suspended_runs{agent=\"b\"} 3"), "{text}");
    }

    #[test]
    fn a_configured_agent_shows_at_zero_whatever_the_store_counts() {
        let metrics = Metrics::new();
        metrics.configure_agent("assistant");
        let zero =
            |text: &str, series: &str| assert!(text.contains(&format!("{series} 0\n")), "{series} in {text}");
        let text = metrics.render(Format::Prometheus).expect("render");
        for family in [
            "started",
            "suspended",
            "resumed",
            "completed",
            "failed",
            "cancelled",
            "expired",
        ] {
            zero(
                &text,
                &format!("agentd_runs_{family}_total{{agent=\"assistant\"}}"),
            );
        }
        zero(&text, "agentd_suspended_runs{agent=\"assistant\"}");
        zero(
            &text,
            "agentd_model_step_duration_seconds_count{agent=\"assistant\"}",
        );
        zero(&text, "agentd_active_streams{rpc=\"watch_runs\"}");
        for holder in ["gone", "live", "unknown"] {
            zero(
                &text,
                &format!("agentd_run_takeovers_total{{holder=\"{holder}\"}}"),
            );
        }
        zero(
            &text,
            "agentd_time_to_first_chunk_seconds_count{rpc=\"subscribe_run\"}",
        );
        assert!(!text.contains("agentd_time_to_first_chunk_seconds_count{rpc=\"watch_runs\"}"));

        metrics.set_suspended_runs(&BTreeMap::from([
            ("assistant".to_owned(), 2),
            ("old".to_owned(), 1),
        ]));
        metrics.set_suspended_runs(&BTreeMap::new());
        let text = metrics.render(Format::Prometheus).expect("render");
        zero(&text, "agentd_suspended_runs{agent=\"assistant\"}");
        assert!(!text.contains("agentd_suspended_runs{agent=\"old\"}"), "{text}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_metrics_are_among_them() {
        let text = Metrics::new().render(Format::OpenMetrics).expect("render");
        for family in [
            "# TYPE process_cpu_seconds counter",
            "# TYPE process_resident_memory_bytes gauge",
            "# TYPE process_open_fds gauge",
            "# TYPE process_max_fds gauge",
            "# TYPE process_start_time_seconds gauge",
        ] {
            assert!(text.contains(family), "{family} in {text}");
        }
        assert!(text.contains("\nprocess_cpu_seconds_total "), "{text}");
    }
}
