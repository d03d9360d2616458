//! The HTTP side of the model providers: one client per provider (its
//! connection pool shared by every agent on that provider), a POST that is
//! retried on 429/5xx and failed connections before any byte of its stream
//! is read, and the error a refused request becomes. Provider modules say
//! what to send and how to read the answer; they never retry themselves.

mod api;
mod events;
mod retry;

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use serde_json::Value;
use tracing::Instrument;

pub(crate) use api::{HttpModel, ProviderApi};
use events::decode;
#[cfg(test)]
pub(crate) use events::decode_events;
pub(crate) use events::StreamDecoder;

use super::{ModelError, ModelErrorCode, ModelStream, ProviderSettings};
use crate::outbound::redirects::{within_origin, Follow};

/// How many bytes of an error body are kept at most.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A provider's HTTP client and settings.
pub(super) struct Transport {
    client: reqwest::Client,
    settings: ProviderSettings,
}

/// A header carrying an API key (`value` holds the key): an error that does
/// not quote the key when it cannot be sent.
pub(super) fn api_key_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        ModelError::new(
            ModelErrorCode::Authentication,
            "the API key contains characters that cannot be sent in a header",
        )
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// Reads a provider's message out of an error body (its JSON error format).
pub(super) type DescribeError = fn(&str) -> Option<String>;

impl Transport {
    pub(super) fn new(settings: ProviderSettings) -> Result<Self, reqwest::Error> {
        // The API key goes with every request: redirects only within
        // the provider's origin, and only ones that keep the body.
        let client = crate::http_client::builder()
            .connect_timeout(settings.connect_timeout)
            .redirect(within_origin(Follow::KeepingTheBody))
            .tcp_nodelay(true)
            .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, settings })
    }

    pub(super) fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    /// The URL of `path` under the provider's base URL.
    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.settings.base_url, path.trim_start_matches('/'))
    }

    /// The model stream of a POST of `body` to `path`: the response's
    /// events, read by `decoder`. Failures before the first byte of the
    /// body are retried as [`Transport::post_stream`] says. The request is
    /// made in a span of its own, `model_request`, and carries the trace
    /// context (`traceparent`, `tracestate`) of the work it is made for.
    pub(super) async fn stream<D: StreamDecoder>(
        &self,
        path: &str,
        mut headers: HeaderMap,
        body: &Value,
        describe: DescribeError,
        decoder: D,
    ) -> Result<ModelStream, ModelError> {
        let span = tracing::info_span!("model_request", provider = %self.settings.name);
        let response = async {
            crate::propagation::insert_outgoing(&mut headers);
            self.post_stream(&self.url(path), headers, body, describe).await
        }
        .instrument(span)
        .await?;
        Ok(decode(
            &self.settings.name,
            response,
            decoder,
            self.settings.idle_timeout,
        ))
    }

    /// POSTs `body` to `url` asking for an event stream, and returns the
    /// successful response with its body unread. 429 and 5xx answers and
    /// failed connections are tried again up to `max_retries` times.
    async fn post_stream(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
        describe: DescribeError,
    ) -> Result<Response, ModelError> {
        let mut retry = 0;
        loop {
            let request = self
                .client
                .post(url)
                .headers(headers.clone())
                .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
                .json(body);
            let sent = tokio::time::timeout(self.settings.first_byte_timeout, request.send()).await;
            let wait = match sent {
                Err(_) => {
                    return Err(ModelError::new(
                        ModelErrorCode::Timeout,
                        format!(
                            "{} sent no response within {}",
                            self.settings.name,
                            secs(self.settings.first_byte_timeout)
                        ),
                    ))
                }
                Ok(Err(error)) => {
                    let failure = self.send_error(&error);
                    if !error.is_connect() || retry >= self.settings.max_retries {
                        return Err(failure);
                    }
                    tracing::warn!(provider = %self.settings.name, retry, %failure, "retrying");
                    retry::backoff(self.settings.retry_backoff, retry)
                }
                Ok(Ok(response)) if response.status().is_success() => {
                    return if is_json(&response) {
                        Err(self.not_a_stream(response, describe).await)
                    } else {
                        Ok(response)
                    };
                }
                Ok(Ok(response)) => {
                    let status = response.status();
                    let delay = (retry::is_retryable(status) && retry < self.settings.max_retries)
                        .then(|| retry::delay(response.headers(), self.settings.retry_backoff, retry))
                        .flatten();
                    match delay {
                        Some(wait) => {
                            tracing::warn!(provider = %self.settings.name, retry, %status, ?wait, "retrying");
                            wait
                        }
                        None => return Err(self.refused(response, describe).await),
                    }
                }
            };
            tokio::time::sleep(wait).await;
            retry += 1;
        }
    }

    fn send_error(&self, error: &reqwest::Error) -> ModelError {
        let code = if error.is_timeout() {
            ModelErrorCode::Timeout
        } else {
            ModelErrorCode::Connection
        };
        let verb = if error.is_connect() {
            "could not connect to"
        } else {
            "failed sending the request to"
        };
        ModelError::new(
            code,
            format!(
                "{} {verb} {}: {}",
                self.settings.name,
                self.settings.base_url,
                chain(error)
            ),
        )
    }

    /// A success answer in JSON where an event stream was asked for: a
    /// server that ignores `stream`, or reports errors with status 200.
    async fn not_a_stream(&self, response: Response, describe: DescribeError) -> ModelError {
        let status = response.status();
        let body = read_limited(response, self.settings.idle_timeout).await;
        let message = describe(&body).unwrap_or_else(|| fallback_message(&body, status));
        ModelError::invalid_response(format!(
            "{} answered with JSON instead of an event stream: {message}",
            self.settings.name
        ))
    }

    /// The error a non-success answer becomes, with the provider's message.
    async fn refused(&self, response: Response, describe: DescribeError) -> ModelError {
        let status = response.status();
        let body = read_limited(response, self.settings.idle_timeout).await;
        let message = describe(&body).unwrap_or_else(|| fallback_message(&body, status));
        let code = match status {
            StatusCode::TOO_MANY_REQUESTS => ModelErrorCode::RateLimited,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => ModelErrorCode::Authentication,
            _ => ModelErrorCode::Provider,
        };
        let hint = match (code, &self.settings.api_key, &self.settings.api_key_env) {
            (ModelErrorCode::Authentication, None, Some(var)) => {
                format!(" (the environment variable {var} is not set)")
            }
            (ModelErrorCode::Authentication, None, None) => {
                " (no API key is configured: set api_key_env)".to_owned()
            }
            _ => String::new(),
        };
        ModelError::new(
            code,
            format!("{} answered HTTP {status}: {message}{hint}", self.settings.name),
        )
    }
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of a body, giving up after `idle`.
async fn read_limited(mut response: Response, idle: Duration) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY {
        match tokio::time::timeout(idle, response.chunk()).await {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&body).into_owned()
}

/// The message of a body that is not in the provider's error format: the
/// common shapes of compatible servers, else the body itself.
pub(super) fn fallback_message(body: &str, status: StatusCode) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let found = [
            json.pointer("/error/message"),
            json.get("error"),
            json.get("message"),
            json.get("detail"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_str);
        if let Some(message) = found {
            return message.to_owned();
        }
    }
    let body = body.trim();
    if body.is_empty() {
        return status.canonical_reason().unwrap_or("no message").to_owned();
    }
    const SHOWN: usize = 1000;
    match body.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}...", &body[..end]),
        None => body.to_owned(),
    }
}

/// An error and its sources, as one line.
pub(super) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let inner_text = inner.to_string();
        if !text.contains(&inner_text) {
            text.push_str(": ");
            text.push_str(&inner_text);
        }
        source = inner.source();
    }
    text
}

/// A duration as people write it: `2s`, `0.25s`.
pub(super) fn secs(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_messages_cover_common_error_shapes() {
        let status = StatusCode::BAD_REQUEST;
        assert_eq!(
            fallback_message(r#"{"error":{"message":"bad model"}}"#, status),
            "bad model"
        );
        assert_eq!(
            fallback_message(r#"{"error":"model not found"}"#, status),
            "model not found"
        );
        assert_eq!(
            fallback_message(r#"{"object":"error","message":"too long"}"#, status),
            "too long"
        );
        assert_eq!(fallback_message(r#"{"detail":"Not Found"}"#, status), "Not Found");
        assert_eq!(fallback_message("upstream failed\n", status), "upstream failed");
        assert_eq!(fallback_message("", status), "Bad Request");
        assert_eq!(fallback_message(&"x".repeat(2000), status).len(), 1003);
    }
}
