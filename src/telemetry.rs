//! Where logs and traces go: human-readable or JSON lines on stderr,
//! filtered by `RUST_LOG`, and, with the `otel` cargo feature, spans
//! exported over OTLP (gRPC) to a collector. Set up once, by the binary;
//! the library itself only emits through `tracing`.

use std::io::IsTerminal;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per event, with the fields of the event and of the
    /// spans it happened in (`run_id`, `agent`, `tool_call_id`, ...).
    Json,
}

/// How to set tracing up.
#[derive(Clone, Debug, Default)]
pub struct TelemetryOptions {
    pub format: LogFormat,
    /// The filter when `RUST_LOG` is not set, e.g. `info`.
    pub default_filter: String,
    /// The OTLP/gRPC collector to export spans to, e.g.
    /// `http://localhost:4317`; `None` exports nothing.
    #[cfg(feature = "otel")]
    pub otlp_endpoint: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("setting up tracing: {0}")]
    Init(#[from] tracing_subscriber::util::TryInitError),
    #[cfg(feature = "otel")]
    #[error("setting up OTLP export: {0}")]
    Otlp(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// Keeps the exporters alive; dropping it flushes what is left to export.
pub struct Telemetry {
    #[cfg(feature = "otel")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

/// Installs the global subscriber. Call once, inside the Tokio runtime
/// when exporting over OTLP.
pub fn init(options: TelemetryOptions) -> Result<Telemetry, TelemetryError> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&options.default_filter));
    let lines: Box<dyn Layer<Registry> + Send + Sync> = match options.format {
        // Styled only for a terminal: a log file or a collector gets
        // plain lines (and the server does not style every span's fields).
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .with_writer(std::io::stderr)
            .boxed(),
    };
    let subscriber = tracing_subscriber::registry().with(lines);

    #[cfg(feature = "otel")]
    {
        let (layer, provider) = match &options.otlp_endpoint {
            Some(endpoint) => {
                let (layer, provider) = otel::layer(endpoint)?;
                (Some(layer), Some(provider))
            }
            None => (None, None),
        };
        subscriber.with(layer).with(filter).try_init()?;
        Ok(Telemetry { provider })
    }
    #[cfg(not(feature = "otel"))]
    {
        subscriber.with(filter).try_init()?;
        Ok(Telemetry {})
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otel")]
        if let Some(provider) = self.provider.take() {
            if let Err(error) = provider.shutdown() {
                eprintln!("agentd: flushing the OTLP exporter failed: {error}");
            }
        }
    }
}

/// An error and its causes as one text, `error: cause: its cause`, each
/// said once: an error that quotes its source (`opening the run store:
/// store unavailable: ...`) is not followed by the source again.
pub fn error_text<'a>(chain: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>) -> String {
    let mut text = String::new();
    for cause in chain {
        let cause = cause.to_string();
        if text.contains(cause.trim_end()) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(cause.trim_end());
    }
    text
}

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::WithExportConfig;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use opentelemetry_sdk::Resource;
    use tracing_subscriber::registry::LookupSpan;

    /// A layer exporting every span to the collector at `endpoint`, in
    /// batches, as service `agentd`.
    pub(super) fn layer<S>(
        endpoint: &str,
    ) -> Result<
        (
            tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>,
            SdkTracerProvider,
        ),
        opentelemetry_otlp::ExporterBuildError,
    >
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name("agentd").build())
            .build();
        let tracer = provider.tracer("agentd");
        Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("opening the run store: {0}")]
    struct Quoting(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("binding 127.0.0.1:9")]
    struct Context(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("store unavailable: disk on fire")]
    struct Inner;

    #[test]
    fn each_cause_is_said_once() {
        let quoting = Quoting(Inner);
        assert_eq!(
            error_text(std::iter::successors(
                Some(&quoting as &(dyn std::error::Error + 'static)),
                |error| error.source()
            )),
            "opening the run store: store unavailable: disk on fire"
        );
        let context = Context(Inner);
        assert_eq!(
            error_text(std::iter::successors(
                Some(&context as &(dyn std::error::Error + 'static)),
                |error| error.source()
            )),
            "binding 127.0.0.1:9: store unavailable: disk on fire"
        );
    }
}
