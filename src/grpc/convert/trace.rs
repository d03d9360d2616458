//! The W3C trace context of a request, from its gRPC metadata
//! (`traceparent`, `tracestate`). Never a reason to refuse a request: a
//! context that does not parse is ignored, as the specification says.

use tonic::metadata::MetadataMap;

use crate::domain::TraceContext;
use crate::propagation::{TRACEPARENT, TRACESTATE};

/// The trace context `metadata` carries, if it carries a valid one: one
/// `traceparent`, and the `tracestate` entries (one list, in order).
pub fn trace_context(metadata: &MetadataMap) -> Option<TraceContext> {
    let mut traceparents = metadata.get_all(TRACEPARENT).iter();
    let traceparent = traceparents.next()?;
    if traceparents.next().is_some() {
        tracing::debug!("several traceparent entries: the request's trace context is ignored");
        return None;
    }
    let Ok(traceparent) = traceparent.to_str() else {
        tracing::debug!("a traceparent that is not text: the request's trace context is ignored");
        return None;
    };
    // An entry that is not text spoils the list, which is then left out.
    let tracestate: Vec<&str> = metadata
        .get_all(TRACESTATE)
        .iter()
        .map(|value| value.to_str())
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    TraceContext::from_headers(traceparent, tracestate)
        .inspect_err(|error| tracing::debug!(%error, "the request's trace context is ignored"))
        .ok()
}
