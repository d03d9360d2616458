//! OpenAI-compatible Chat Completions, streamed: OpenAI itself, and the
//! servers that speak its API (Ollama, vLLM, llama.cpp's server, LM Studio
//! and others) at a configured base URL. The request mapping, the stream
//! reading and the error format each live in their own file; retries and
//! timeouts are the transport's.

mod error;
mod request;
mod stream;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};

use super::http::{decode, Transport};
use super::{LanguageModel, ModelError, ModelErrorCode, ModelRequest, ModelStream};

/// A model served through Chat Completions.
pub struct OpenAiChat {
    /// As configured, e.g. `openai:gpt-4o-mini`.
    name: String,
    /// As the provider knows it, e.g. `gpt-4o-mini`.
    model: String,
    transport: Arc<Transport>,
}

impl OpenAiChat {
    pub(crate) fn new(name: &str, model: &str, transport: Arc<Transport>) -> Self {
        Self {
            name: name.to_owned(),
            model: model.to_owned(),
            transport,
        }
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.transport.settings().api_key {
            let value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ModelError::new(
                    ModelErrorCode::Authentication,
                    "the API key contains characters that cannot be sent in a header",
                )
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }
}

#[async_trait]
impl LanguageModel for OpenAiChat {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError> {
        let settings = self.transport.settings();
        let body = request::body(&self.model, &request, settings.max_tokens);
        let url = self.transport.url("chat/completions");
        tracing::debug!(provider = %settings.name, model = %self.model, "chat completions request");
        let response = self
            .transport
            .post_stream(&url, self.headers()?, &body, error::describe)
            .await?;
        let decoder = stream::ChatDecoder::new(&settings.name);
        Ok(decode(&settings.name, response, decoder, settings.idle_timeout))
    }
}
