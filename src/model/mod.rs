//! Language models. A model turns a conversation into a stream of text
//! deltas and complete tool calls, ending with the step's token usage. It
//! does no persistence and knows nothing of runs; dropping its stream
//! cancels it.

mod scripted;

use std::pin::Pin;

use async_trait::async_trait;
use tokio_stream::Stream;

pub use scripted::Scripted;

use crate::agent::Message;
use crate::chunk::Usage;
use crate::tools::{ToolCall, ToolSpec};

/// What a model is asked for one step.
pub struct ModelRequest<'a> {
    pub messages: &'a [Message],
    pub tools: Vec<&'a ToolSpec>,
}

/// What a model produces during a step.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    /// A complete tool call (providers assemble argument deltas first).
    ToolCall(ToolCall),
    /// Tokens used by the step; the last event.
    Usage(Usage),
}

/// A failure of the model provider.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    pub message: String,
}

/// The stream of one model step.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A language model.
#[async_trait]
pub trait LanguageModel: Send + Sync + 'static {
    /// The model's name as configured, e.g. `scripted`.
    fn name(&self) -> &str;

    /// Starts one step.
    async fn stream(&self, request: ModelRequest<'_>) -> Result<ModelStream, ModelError>;
}
