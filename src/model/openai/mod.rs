//! OpenAI-compatible Chat Completions, streamed: OpenAI itself, and the
//! servers that speak its API (Ollama, vLLM, llama.cpp's server, LM Studio
//! and others) at a configured base URL. The request mapping, the stream
//! reading and the error format each live in their own file; retries and
//! timeouts are the transport's.

mod error;
mod request;
mod stream;

use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde_json::Value;

use super::http::{api_key_header, HttpModel, ProviderApi};
use super::{ModelError, ModelRequest, ProviderSettings};

/// A model served through Chat Completions.
pub(crate) type OpenAiChat = HttpModel<ChatCompletions>;

/// The Chat Completions API.
pub(crate) struct ChatCompletions;

impl ProviderApi for ChatCompletions {
    const PATH: &'static str = "chat/completions";
    const REQUEST: &'static str = "chat completions request";

    type Decoder = stream::ChatDecoder;

    fn headers(settings: &ProviderSettings) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &settings.api_key {
            let value = api_key_header(&format!("Bearer {key}"))?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    fn body(model: &str, request: &ModelRequest<'_>, settings: &ProviderSettings) -> Value {
        request::body(model, request, settings.max_tokens)
    }

    fn decoder(provider: &str) -> Self::Decoder {
        stream::ChatDecoder::new(provider)
    }

    fn describe(body: &str) -> Option<String> {
        error::describe(body)
    }
}
