//! The gRPC server metrics every gRPC service exports, under the names and
//! labels of the grpc-ecosystem's interceptors (go-grpc-prometheus,
//! go-grpc-middleware), so that their dashboards and alerts work as they
//! are: calls started, calls handled by status code, handling time, and
//! messages received and sent, each by `grpc_type`, `grpc_service` and
//! `grpc_method`. A method's series are made when the server declares it
//! ([`Metrics::grpc_method`]), every code at zero, as `InitializeMetrics`
//! does there; what records into them is the server's (a tower service
//! around each gRPC service).

use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, Opts, Registry};
use tonic::Code;

use super::register;

/// Seconds from a call to its last response byte: Prometheus's default
/// buckets, then longer ones for the streams that follow a run.
const HANDLING_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// Every status code, in their numeric order.
const CODES: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

/// A code's canonical name, as gRPC's own implementations print it and
/// the `grpc_code` label carries it (`OK`, `Canceled`, `InvalidArgument`).
pub(super) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

/// How a method streams, as the `grpc_type` label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrpcType {
    Unary,
    ClientStream,
    ServerStream,
    BidiStream,
}

impl GrpcType {
    /// The type of a method whose client, server, or both stream.
    pub fn of(client_streaming: bool, server_streaming: bool) -> Self {
        match (client_streaming, server_streaming) {
            (false, false) => GrpcType::Unary,
            (true, false) => GrpcType::ClientStream,
            (false, true) => GrpcType::ServerStream,
            (true, true) => GrpcType::BidiStream,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GrpcType::Unary => "unary",
            GrpcType::ClientStream => "client_stream",
            GrpcType::ServerStream => "server_stream",
            GrpcType::BidiStream => "bidi_stream",
        }
    }
}

pub(super) struct GrpcFamilies {
    started: IntCounterVec,
    handled: IntCounterVec,
    handling: HistogramVec,
    received: IntCounterVec,
    sent: IntCounterVec,
}

const METHOD_LABELS: [&str; 3] = ["grpc_type", "grpc_service", "grpc_method"];

impl GrpcFamilies {
    pub(super) fn new(registry: &Registry) -> Self {
        let counter = |name: &str, help: &str, labels: &[&str]| {
            let family =
                IntCounterVec::new(Opts::new(name, help), labels).expect("a valid counter definition");
            register(registry, family)
        };
        let handling = HistogramVec::new(
            HistogramOpts::new(
                "grpc_server_handling_seconds",
                "Time from a call's request to the end of its response (the last message of a stream), by method.",
            )
            .buckets(HANDLING_BUCKETS.to_vec()),
            &METHOD_LABELS,
        )
        .expect("a valid histogram definition");
        Self {
            started: counter(
                "grpc_server_started_total",
                "Calls started on the server, by method.",
                &METHOD_LABELS,
            ),
            handled: counter(
                "grpc_server_handled_total",
                "Calls finished on the server, by method and status code (a stream's is its trailers').",
                &["grpc_type", "grpc_service", "grpc_method", "grpc_code"],
            ),
            handling: register(registry, handling),
            received: counter(
                "grpc_server_msg_received_total",
                "Messages received from clients, by method.",
                &METHOD_LABELS,
            ),
            sent: counter(
                "grpc_server_msg_sent_total",
                "Messages sent to clients, by method.",
                &METHOD_LABELS,
            ),
        }
    }
}

/// The series of one method, every one present from the moment it is
/// made. Cloning shares them.
#[derive(Clone)]
pub struct GrpcMethodMetrics {
    started: IntCounter,
    /// By code, in the order of [`CODES`].
    handled: Vec<IntCounter>,
    handling: Histogram,
    received: IntCounter,
    sent: IntCounter,
}

impl GrpcMethodMetrics {
    /// A call came in.
    pub fn started(&self) {
        self.started.inc();
    }

    /// A call ended with `code`, `seconds` after it came in.
    pub fn handled(&self, code: Code, seconds: f64) {
        let index = CODES.iter().position(|known| *known == code);
        // Every code is among CODES; an unknown one counts as Unknown.
        self.handled[index.unwrap_or(2)].inc();
        self.handling.observe(seconds);
    }

    /// `count` more messages came in from the client.
    pub fn received(&self, count: u64) {
        self.received.inc_by(count);
    }

    /// `count` more messages went out to the client.
    pub fn sent(&self, count: u64) {
        self.sent.inc_by(count);
    }
}

impl super::Metrics {
    /// The series of `service`'s `method`, made now (at zero) if they were
    /// not yet.
    pub fn grpc_method(&self, kind: GrpcType, service: &str, method: &str) -> GrpcMethodMetrics {
        let families = &self.families.grpc;
        let labels = [kind.as_str(), service, method];
        GrpcMethodMetrics {
            started: families.started.with_label_values(&labels),
            handled: CODES
                .iter()
                .map(|code| {
                    families
                        .handled
                        .with_label_values(&[kind.as_str(), service, method, code_name(*code)])
                })
                .collect(),
            handling: families.handling.with_label_values(&labels),
            received: families.received.with_label_values(&labels),
            sent: families.sent.with_label_values(&labels),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::{Format, Metrics};

    use super::*;

    #[test]
    fn a_method_is_at_zero_for_every_code_until_it_is_called() {
        let metrics = Metrics::new();
        let method = metrics.grpc_method(GrpcType::ServerStream, "agentd.v1.AgentService", "Resume");
        let series =
            "grpc_method=\"Resume\",grpc_service=\"agentd.v1.AgentService\",grpc_type=\"server_stream\"";
        let text = metrics.render(Format::Prometheus).expect("render");
        for code in CODES {
            let line = format!(
                "grpc_server_handled_total{{grpc_code=\"{}\",{series}}} 0",
                code_name(code)
            );
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert!(
            text.contains(&format!("grpc_server_started_total{{{series}}} 0")),
            "{text}"
        );
        assert!(
            text.contains(&format!("grpc_server_handling_seconds_count{{{series}}} 0")),
            "{text}"
        );

        method.started();
        method.received(1);
        method.sent(3);
        method.handled(Code::FailedPrecondition, 0.02);
        let text = metrics.render(Format::Prometheus).expect("render");
        for line in [
            format!("grpc_server_started_total{{{series}}} 1"),
            format!("grpc_server_handled_total{{grpc_code=\"FailedPrecondition\",{series}}} 1"),
            format!("grpc_server_handled_total{{grpc_code=\"OK\",{series}}} 0"),
            format!("grpc_server_msg_received_total{{{series}}} 1"),
            format!("grpc_server_msg_sent_total{{{series}}} 3"),
            format!("grpc_server_handling_seconds_bucket{{{series},le=\"0.025\"}} 1"),
        ] {
            assert!(text.contains(&line), "{line} in {text}");
        }
    }
}
