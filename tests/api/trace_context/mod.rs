//! W3C trace context through the API: the `traceparent` and `tracestate`
//! metadata of a StreamAgent or a Resume become the trace of the run's
//! execution, and go on to the model provider, HTTP tools and MCP servers
//! it calls, with the same trace id, a parent-id of agentd's own and the
//! state unchanged; a Resume's own context is its continuation's, which
//! links to the trace that started the run; a malformed one is ignored.

mod logs;
mod providers;
mod tools;

use agentd::pb::{self, AgentChunk};
use tonic::Status;

use crate::helpers::{collect, TestServer};

/// The context a run is started with.
pub(crate) const STARTED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
pub(crate) const STARTED_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
pub(crate) const STARTED_PARENT: &str = "00f067aa0ba902b7";
/// The context a Resume of it comes with, days later.
pub(crate) const RESUMED: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
pub(crate) const RESUMED_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
pub(crate) const RESUMED_PARENT: &str = "b7ad6b7169203331";
/// Vendors' state, passed on as it is.
pub(crate) const STATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";

/// `message` with `traceparent` and, if given, `tracestate` metadata.
pub(crate) fn traced<T>(message: T, traceparent: &str, tracestate: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    let metadata = request.metadata_mut();
    metadata.insert("traceparent", traceparent.parse().expect("ASCII"));
    if let Some(state) = tracestate {
        metadata.insert("tracestate", state.parse().expect("ASCII"));
    }
    request
}

/// Runs `prompt` on `agent_id` with this trace context.
pub(crate) async fn start_traced(
    server: &TestServer,
    agent_id: &str,
    prompt: &str,
    traceparent: &str,
    tracestate: Option<&str>,
) -> Result<Vec<AgentChunk>, Status> {
    let start = pb::StreamAgentRequest {
        agent_id: agent_id.into(),
        prompt: prompt.into(),
        ..Default::default()
    };
    let stream = server
        .client()
        .stream_agent(traced(start, traceparent, tracestate))
        .await?
        .into_inner();
    collect(stream).await
}

/// Answers `run_id`'s one question with `text`, with this trace context.
pub(crate) async fn resume_traced(
    server: &TestServer,
    run_id: &str,
    text: &str,
    traceparent: &str,
) -> Result<Vec<AgentChunk>, Status> {
    let resume = crate::helpers::resume_request(run_id, "", pb::resume_request::Answer::Text(text.into()));
    let stream = server
        .client()
        .resume(traced(resume, traceparent, None))
        .await?
        .into_inner();
    collect(stream).await
}

/// The trace-id, parent-id and flags of a `traceparent` sent out, checked
/// to be one (version 00, lowercase hex, no zero ids).
pub(crate) fn parts(traceparent: &str) -> (String, String, String) {
    let fields: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(fields.len(), 4, "{traceparent}");
    assert_eq!(fields[0], "00", "{traceparent}");
    let hex = |field: &str, len: usize| {
        assert_eq!(field.len(), len, "{traceparent}");
        assert!(
            field
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{traceparent}"
        );
        assert!(field.bytes().any(|b| b != b'0'), "{traceparent}");
    };
    hex(fields[1], 32);
    hex(fields[2], 16);
    (fields[1].to_owned(), fields[2].to_owned(), fields[3].to_owned())
}

/// Asserts that `traceparent` continues the trace `trace` from a span of
/// agentd's (not the caller's `parent`), sampled.
pub(crate) fn assert_continues(traceparent: Option<&str>, trace: &str, parent: &str) {
    let traceparent = traceparent.expect("a traceparent was sent");
    let (sent_trace, sent_parent, flags) = parts(traceparent);
    assert_eq!(sent_trace, trace, "the caller's trace");
    assert_ne!(sent_parent, parent, "agentd's own span, not the caller's");
    assert_eq!(flags, "01", "sampled, as the caller said");
}
