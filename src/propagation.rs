//! W3C trace context propagation: the trace context the work in progress
//! carries, and the `traceparent` / `tracestate` headers that carry it on
//! to the services a run calls (model providers, HTTP tools, MCP servers).
//!
//! An execution runs in [`scope`] of the trace context of the request that
//! gave this replica the run, and its span continues that trace
//! ([`adopt`]). A call out asks [`outgoing`] what to send: with the `otel`
//! feature and an exporting layer, the current span's own context (the
//! request's trace, the span's id as parent-id), read with OpenTelemetry's
//! `TraceContextPropagator`; without, the request's context continued from
//! a fresh random parent-id, so that the callee's spans still join the
//! caller's trace. No context, no headers. Nothing here fails a call.

use std::future::Future;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::domain::{SpanId, TraceContext};

/// The header (and gRPC metadata key) of the trace and parent span.
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The header (and gRPC metadata key) of the vendors' trace state.
pub(crate) const TRACESTATE: &str = "tracestate";

tokio::task_local! {
    /// The trace context of the request the current task works for.
    static RECEIVED: Option<TraceContext>;
}

/// Runs `work` on behalf of a request that came with `trace`.
pub(crate) fn scope<F: Future>(trace: Option<TraceContext>, work: F) -> impl Future<Output = F::Output> {
    RECEIVED.scope(trace, work)
}

/// The trace context of the request the current task works for, as it
/// was received.
pub(crate) fn received() -> Option<TraceContext> {
    RECEIVED.try_with(Clone::clone).ok().flatten()
}

/// The trace context a call made now sends: see the module's comment.
/// With `otel` and no received context, only a sampled span's.
pub(crate) fn outgoing() -> Option<TraceContext> {
    let received = received();
    #[cfg(feature = "otel")]
    if let Some(span) = otel::current_span() {
        return (span.sampled() || received.is_some()).then_some(span);
    }
    received.map(|trace| trace.child(SpanId::random()))
}

/// `trace` as the headers of a request.
pub(crate) fn headers_of(trace: &TraceContext) -> Vec<(HeaderName, HeaderValue)> {
    let mut headers = Vec::with_capacity(2);
    // Both are validated ASCII, so these conversions hold.
    if let Ok(value) = HeaderValue::from_str(&trace.traceparent()) {
        headers.push((HeaderName::from_static(TRACEPARENT), value));
    }
    if let Some(Ok(value)) = trace.tracestate().map(|state| HeaderValue::from_str(&state)) {
        headers.push((HeaderName::from_static(TRACESTATE), value));
    }
    headers
}

/// Adds the headers of [`outgoing`] to `headers`, replacing any of the same
/// name (a configured header does not fork the trace).
pub(crate) fn insert_outgoing(headers: &mut HeaderMap) {
    if let Some(trace) = outgoing() {
        for (name, value) in headers_of(&trace) {
            headers.insert(name, value);
        }
    }
}

/// Makes `span` continue the trace of `parent` (with `otel`: its parent
/// context, through the `TraceContextPropagator`) and link to `linked`, the
/// trace of an earlier request of the same run. Without `otel`, the span's
/// `trace_id` and `linked_trace_id` fields, set by its maker, say as much.
pub(crate) fn adopt(span: &tracing::Span, parent: Option<&TraceContext>, linked: Option<&TraceContext>) {
    #[cfg(feature = "otel")]
    otel::adopt(span, parent, linked);
    #[cfg(not(feature = "otel"))]
    let _ = (span, parent, linked);
}

#[cfg(feature = "otel")]
mod otel {
    use std::collections::HashMap;

    use opentelemetry::propagation::TextMapPropagator;
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::{TRACEPARENT, TRACESTATE};
    use crate::domain::TraceContext;

    /// `trace` as an OpenTelemetry context, the standard way: its headers
    /// extracted by the W3C propagator.
    fn context_of(trace: &TraceContext) -> opentelemetry::Context {
        let mut carrier = HashMap::from([(TRACEPARENT.to_owned(), trace.traceparent())]);
        if let Some(state) = trace.tracestate() {
            carrier.insert(TRACESTATE.to_owned(), state);
        }
        TraceContextPropagator::new().extract(&carrier)
    }

    pub(super) fn adopt(span: &tracing::Span, parent: Option<&TraceContext>, linked: Option<&TraceContext>) {
        if let Some(parent) = parent {
            // Refused only without an OpenTelemetry layer: nothing to do.
            if let Err(error) = span.set_parent(context_of(parent)) {
                tracing::trace!(%error, "the span keeps its own trace");
            }
        }
        if let Some(linked) = linked {
            span.add_link(context_of(linked).span().span_context().clone());
        }
    }

    /// The current span's context, if it has a valid one (an
    /// OpenTelemetry layer exports spans).
    pub(super) fn current_span() -> Option<TraceContext> {
        let mut carrier: HashMap<String, String> = HashMap::new();
        TraceContextPropagator::new().inject_context(&tracing::Span::current().context(), &mut carrier);
        let traceparent = carrier.get(TRACEPARENT)?;
        let tracestate = carrier.get(TRACESTATE).map(String::as_str);
        TraceContext::from_headers(traceparent, tracestate).ok()
    }

    #[cfg(test)]
    mod tests {
        use std::sync::{Arc, Mutex};

        use opentelemetry::trace::TracerProvider as _;
        use opentelemetry_sdk::error::OTelSdkResult;
        use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
        use tracing_subscriber::layer::SubscriberExt;

        use super::super::{adopt, outgoing};
        use crate::domain::TraceContext;

        const STARTED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        const RESUMED: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

        /// Keeps the spans it exports, for the test to read.
        #[derive(Clone, Debug, Default)]
        struct Kept(Arc<Mutex<Vec<SpanData>>>);

        impl SpanExporter for Kept {
            async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
                self.0.lock().unwrap().extend(batch);
                Ok(())
            }
        }

        /// Runs `test` with an OpenTelemetry layer exporting to `kept`.
        fn exporting_to(kept: &Kept, test: impl FnOnce()) {
            let provider = SdkTracerProvider::builder()
                .with_simple_exporter(kept.clone())
                .build();
            let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
            let subscriber = tracing_subscriber::registry().with(layer);
            tracing::subscriber::with_default(subscriber, test);
        }

        #[test]
        fn a_call_continues_the_adopted_trace_from_its_own_span() {
            let received = TraceContext::from_headers(STARTED, ["rojo=1"]).unwrap();
            exporting_to(&Kept::default(), || {
                let run = tracing::info_span!("run");
                adopt(&run, Some(&received), None);
                let call = run.in_scope(|| tracing::info_span!("model_request"));
                let sent = call.in_scope(outgoing).expect("a context to send");
                assert_eq!(sent.trace_id(), received.trace_id());
                assert_ne!(sent.parent_id(), received.parent_id());
                assert!(sent.sampled());
                assert_eq!(sent.tracestate().as_deref(), Some("rojo=1"));
                let again = call.in_scope(outgoing).expect("a context to send");
                assert_eq!(again.parent_id(), sent.parent_id(), "the span's own id");
            });
        }

        #[test]
        fn without_a_received_context_a_sampled_span_starts_the_trace() {
            exporting_to(&Kept::default(), || {
                let span = tracing::info_span!("run");
                let sent = span.in_scope(outgoing).expect("the span's context");
                assert!(sent.sampled());
                assert_eq!(sent.tracestate(), None);
            });
        }

        #[test]
        fn a_resumed_execution_is_the_resumes_child_and_links_to_the_start() {
            let started = TraceContext::parse_traceparent(STARTED).unwrap();
            let resumed = TraceContext::parse_traceparent(RESUMED).unwrap();
            let kept = Kept::default();
            exporting_to(&kept, || {
                let span = tracing::info_span!("run");
                adopt(&span, Some(&resumed), Some(&started));
            });
            let spans = kept.0.lock().unwrap();
            assert_eq!(spans.len(), 1);
            let run = &spans[0];
            assert_eq!(
                run.span_context.trace_id().to_string(),
                resumed.trace_id().to_string()
            );
            assert_eq!(run.parent_span_id.to_string(), resumed.parent_id().to_string());
            assert!(run.parent_span_is_remote);
            let links = &run.links.links;
            assert_eq!(links.len(), 1);
            assert_eq!(
                links[0].span_context.trace_id().to_string(),
                started.trace_id().to_string()
            );
            assert_eq!(
                links[0].span_context.span_id().to_string(),
                started.parent_id().to_string()
            );
        }
    }
}
