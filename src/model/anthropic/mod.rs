//! Anthropic Messages, streamed (`POST {base_url}/v1/messages`). The
//! request mapping, the stream reading and the error format each live in
//! their own file; retries and timeouts are the transport's.

mod error;
mod request;
mod stream;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::http::{api_key_header, Transport};
use super::provider::DEFAULT_ANTHROPIC_MAX_TOKENS;
use super::{LanguageModel, ModelError, ModelRequest, ModelStream};

/// The API version the request and stream formats here follow.
pub const API_VERSION: &str = "2023-06-01";

/// A model served through Anthropic Messages.
pub struct AnthropicMessages {
    /// As configured, e.g. `anthropic:claude-sonnet-4-5`.
    name: String,
    /// As the provider knows it.
    model: String,
    transport: Arc<Transport>,
}

impl AnthropicMessages {
    pub(crate) fn new(name: &str, model: &str, transport: Arc<Transport>) -> Self {
        Self {
            name: name.to_owned(),
            model: model.to_owned(),
            transport,
        }
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        if let Some(key) = &self.transport.settings().api_key {
            let value = api_key_header(key)?;
            headers.insert(HeaderName::from_static("x-api-key"), value);
        }
        Ok(headers)
    }
}

#[async_trait]
impl LanguageModel for AnthropicMessages {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError> {
        let settings = self.transport.settings();
        let max_tokens = settings.max_tokens.unwrap_or(DEFAULT_ANTHROPIC_MAX_TOKENS);
        let body = request::body(&self.model, &request, max_tokens);
        tracing::debug!(provider = %settings.name, model = %self.model, "messages request");
        let decoder = stream::MessagesDecoder::new(&settings.name);
        self.transport
            .stream("v1/messages", self.headers()?, &body, error::describe, decoder)
            .await
    }
}
