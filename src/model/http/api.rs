//! What the provider adapters share: a model is a configured name, the
//! provider's name for it and its transport, and each step is one
//! streamed POST. An adapter says only what its API sends and reads.

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::{StreamDecoder, Transport};
use crate::model::{LanguageModel, ModelError, ModelRequest, ModelStream, ProviderSettings};

/// A provider's API: where a step is sent, with which headers and body,
/// and how its stream and its errors are read.
pub(crate) trait ProviderApi: Send + Sync + 'static {
    /// The path of a step under the provider's base URL.
    const PATH: &'static str;
    /// What the debug log calls a step's request.
    const REQUEST: &'static str;

    type Decoder: StreamDecoder;

    /// The request's headers (the API key among them).
    fn headers(settings: &ProviderSettings) -> Result<HeaderMap, ModelError>;

    /// The request's body.
    fn body(model: &str, request: &ModelRequest<'_>, settings: &ProviderSettings) -> Value;

    /// The reader of a step's stream from `provider`.
    fn decoder(provider: &str) -> Self::Decoder;

    /// The provider's message in an error body.
    fn describe(body: &str) -> Option<String>;
}

/// A model served through the provider API `A`.
pub(crate) struct HttpModel<A> {
    /// As configured, e.g. `openai:gpt-4o-mini`.
    name: String,
    /// As the provider knows it, e.g. `gpt-4o-mini`.
    model: String,
    transport: Arc<Transport>,
    api: PhantomData<fn() -> A>,
}

impl<A: ProviderApi> HttpModel<A> {
    pub(crate) fn new(name: &str, model: &str, transport: Arc<Transport>) -> Self {
        Self {
            name: name.to_owned(),
            model: model.to_owned(),
            transport,
            api: PhantomData,
        }
    }
}

#[async_trait]
impl<A: ProviderApi> LanguageModel for HttpModel<A> {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError> {
        let settings = self.transport.settings();
        let body = A::body(&self.model, &request, settings);
        tracing::debug!(provider = %settings.name, model = %self.model, "{}", A::REQUEST);
        let decoder = A::decoder(&settings.name);
        self.transport
            .stream(A::PATH, A::headers(settings)?, &body, A::describe, decoder)
            .await
    }
}
