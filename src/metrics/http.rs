//! The HTTP surfaces' metrics, beside the gRPC ones (`grpc.rs`): requests
//! answered, by surface and HTTP status code
//! (`agentd_http_requests_total{surface, code}`), and responses that
//! stream events still open, by surface (`agentd_open_streams{surface}`).
//! Each surface's open-streams series exists from the start, at zero;
//! what records into them is the server's (a tower layer around each
//! surface's routes).

use prometheus::{IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use super::register;

/// An HTTP surface on the listen port, as the `surface` label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpSurface {
    /// MCP's Streamable HTTP at `/mcp`.
    Mcp,
    /// AG-UI at `/ag-ui`.
    AgUi,
    /// A2A's JSON-RPC binding at `/a2a/jsonrpc`.
    A2aJsonRpc,
    /// A2A's HTTP+JSON binding below `/a2a/rest`.
    A2aRest,
    /// The inbox's pages.
    Inbox,
    /// The agent cards (`/.well-known/agent-card.json`, ...).
    AgentCard,
}

impl HttpSurface {
    pub const ALL: [HttpSurface; 6] = [
        HttpSurface::Mcp,
        HttpSurface::AgUi,
        HttpSurface::A2aJsonRpc,
        HttpSurface::A2aRest,
        HttpSurface::Inbox,
        HttpSurface::AgentCard,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HttpSurface::Mcp => "mcp",
            HttpSurface::AgUi => "ag_ui",
            HttpSurface::A2aJsonRpc => "a2a_jsonrpc",
            HttpSurface::A2aRest => "a2a_rest",
            HttpSurface::Inbox => "inbox",
            HttpSurface::AgentCard => "agent_card",
        }
    }
}

pub(super) struct HttpFamilies {
    requests: IntCounterVec,
    open_streams: IntGaugeVec,
}

impl HttpFamilies {
    pub(super) fn new(registry: &Registry) -> Self {
        let requests = IntCounterVec::new(
            Opts::new(
                "agentd_http_requests_total",
                "HTTP requests answered, by surface and status code (refusals included).",
            ),
            &["surface", "code"],
        )
        .expect("a valid counter definition");
        let open_streams = IntGaugeVec::new(
            Opts::new(
                "agentd_open_streams",
                "HTTP responses streaming events (text/event-stream, AG-UI's protobuf) open now, by surface.",
            ),
            &["surface"],
        )
        .expect("a valid gauge definition");
        let families = Self {
            requests: register(registry, requests),
            open_streams: register(registry, open_streams),
        };
        for surface in HttpSurface::ALL {
            families.open_streams.with_label_values(&[surface.as_str()]);
        }
        families
    }
}

/// The series of one surface. Cloning shares them.
#[derive(Clone)]
pub struct HttpSurfaceMetrics {
    surface: HttpSurface,
    requests: IntCounterVec,
    open_streams: IntGauge,
}

impl HttpSurfaceMetrics {
    /// A request was answered with `code`.
    pub fn answered(&self, code: u16) {
        self.requests
            .with_label_values(&[self.surface.as_str(), &code.to_string()])
            .inc();
    }

    /// A response began to stream events: counted among the open ones
    /// until the returned count is dropped.
    pub fn stream_opened(&self) -> OpenStreamCount {
        self.open_streams.inc();
        OpenStreamCount(self.open_streams.clone())
    }
}

/// One open stream in `agentd_open_streams`, for as long as it lives.
pub struct OpenStreamCount(IntGauge);

impl Drop for OpenStreamCount {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl super::Metrics {
    /// The series of `surface`.
    pub fn http_surface(&self, surface: HttpSurface) -> HttpSurfaceMetrics {
        let families = &self.families.http;
        HttpSurfaceMetrics {
            surface,
            requests: families.requests.clone(),
            open_streams: families.open_streams.with_label_values(&[surface.as_str()]),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::metrics::{Format, Metrics};

    use super::*;

    #[test]
    fn requests_by_code_and_open_streams_by_surface() {
        let metrics = Metrics::new();
        let text = metrics.render(Format::Prometheus).expect("render");
        for surface in HttpSurface::ALL {
            let line = format!("agentd_open_streams{{surface=\"{}\"}} 0", surface.as_str());
            assert!(text.contains(&line), "{line} in {text}");
        }
        let ag_ui = metrics.http_surface(HttpSurface::AgUi);
        ag_ui.answered(200);
        ag_ui.answered(429);
        let open = ag_ui.stream_opened();
        let text = metrics.render(Format::Prometheus).expect("render");
        for line in [
            "agentd_http_requests_total{code=\"200\",surface=\"ag_ui\"} 1",
            "agentd_http_requests_total{code=\"429\",surface=\"ag_ui\"} 1",
            "agentd_open_streams{surface=\"ag_ui\"} 1",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        drop(open);
        let text = metrics.render(Format::Prometheus).expect("render");
        assert!(
            text.contains("agentd_open_streams{surface=\"ag_ui\"} 0"),
            "{text}"
        );
    }
}
