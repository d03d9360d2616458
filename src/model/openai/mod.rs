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
use reqwest::header::{HeaderMap, AUTHORIZATION};

use super::http::{api_key_header, Transport};
use super::{LanguageModel, ModelError, ModelRequest, ModelStream};

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
            let value = api_key_header(&format!("Bearer {key}"))?;
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
        tracing::debug!(provider = %settings.name, model = %self.model, "chat completions request");
        let decoder = stream::ChatDecoder::new(&settings.name);
        self.transport
            .stream(
                "chat/completions",
                self.headers()?,
                &body,
                error::describe,
                decoder,
            )
            .await
    }
}
