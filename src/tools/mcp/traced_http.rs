//! The HTTP client of the streamable HTTP transport: rmcp's own reqwest
//! client, and on the POST of a tool call the trace context that call
//! carries in its `params._meta` (where MCP puts it, SEP-414) as the
//! `traceparent` and `tracestate` headers too, for HTTP-level tracing.
//!
//! rmcp sends every request from its transport task with the headers of
//! the connection; only the message tells one request from another, so the
//! headers are read from it here.

use std::collections::HashMap;
use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, RequestParamsMeta};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};

use crate::domain::TraceContext;
use crate::outbound::redirects::{within_origin, Follow};
use crate::propagation;

type Headers = HashMap<HeaderName, HeaderValue>;
type Failure = StreamableHttpError<reqwest::Error>;

/// rmcp's reqwest client, adding each tool call's trace headers.
#[derive(Clone)]
pub(super) struct TracedHttpClient(reqwest::Client);

impl TracedHttpClient {
    /// A client set up as rmcp's default one: no idle connections kept (a
    /// reused connection whose last body was not read to its end stalls),
    /// and only same-origin 307/308 redirects followed (others would lose
    /// the body); one to another origin is refused, so the session and
    /// the configured headers stay with the configured server.
    pub(super) fn new() -> Result<Self, reqwest::Error> {
        let client = crate::http_client::builder()
            .pool_max_idle_per_host(0)
            .redirect(within_origin(Follow::KeepingTheBody))
            .build()?;
        Ok(Self(client))
    }
}

/// The trace context a message carries: a tool call's `_meta`.
fn trace_of(message: &ClientJsonRpcMessage) -> Option<TraceContext> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    TraceContext::from_headers(call.params.traceparent()?, call.params.tracestate()).ok()
}

/// `headers` with the trace headers of `message`, if it has any.
fn with_trace(message: &ClientJsonRpcMessage, mut headers: Headers) -> Headers {
    if let Some(trace) = trace_of(message) {
        headers.extend(propagation::headers_of(&trace));
    }
    headers
}

impl StreamableHttpClient for TracedHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let headers = with_trace(&message, custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let headers = with_trace(&message, custom_headers);
        self.0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let headers = with_trace(&message, custom_headers);
        self.0
            .post_message_with_response_limits(uri, message, session_id, auth_header, headers, limits)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), Failure> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<BoxedSseResponse, Failure> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, Failure> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
