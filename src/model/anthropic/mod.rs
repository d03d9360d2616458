//! Anthropic Messages, streamed (`POST {base_url}/v1/messages`). The
//! request mapping, the stream reading and the error format each live in
//! their own file; retries and timeouts are the transport's.

mod error;
mod request;
mod stream;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::http::{api_key_header, HttpModel, ProviderApi};
use super::provider::DEFAULT_ANTHROPIC_MAX_TOKENS;
use super::{ModelError, ModelRequest, ProviderSettings};

/// The API version the request and stream formats here follow.
pub(super) const API_VERSION: &str = "2023-06-01";

/// A model served through Anthropic Messages.
pub(crate) type AnthropicMessages = HttpModel<Messages>;

/// The Anthropic Messages API.
pub(crate) struct Messages;

impl ProviderApi for Messages {
    const PATH: &'static str = "v1/messages";
    const REQUEST: &'static str = "messages request";

    type Decoder = stream::MessagesDecoder;

    fn headers(settings: &ProviderSettings) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = &settings.api_key {
            let value = api_key_header(key)?;
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(headers)
    }

    fn body(model: &str, request: &ModelRequest<'_>, settings: &ProviderSettings) -> Value {
        let max_tokens = settings.max_tokens.unwrap_or(DEFAULT_ANTHROPIC_MAX_TOKENS);
        request::body(model, request, max_tokens)
    }

    fn decoder(provider: &str) -> Self::Decoder {
        stream::MessagesDecoder::new(provider)
    }

    fn describe(body: &str) -> Option<String> {
        error::describe(body)
    }
}
