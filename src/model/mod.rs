//! Language models. A model turns a conversation into a stream of text
//! deltas and complete tool calls, ending with the step's token usage. It
//! does no persistence and knows nothing of runs; dropping its stream
//! cancels it (for a provider, the HTTP request is aborted).
//!
//! `scripted` is built in; `openai` (OpenAI-compatible Chat Completions) and
//! `anthropic` (Messages) reach real providers over HTTP, configured by
//! `[providers.NAME]` tables and chosen by an agent's `model = "NAME:MODEL"`.

mod anthropic;
mod catalog;
mod error;
mod http;
mod openai;
mod provider;
mod scripted;
pub mod sse;

use std::pin::Pin;

use async_trait::async_trait;
use tokio_stream::Stream;

pub(crate) use catalog::ModelCatalog;
pub use catalog::ModelConfigError;
pub use error::{ModelError, ModelErrorCode};
pub(crate) use provider::ProviderSettings;
pub use provider::{ProviderConfig, ProviderConfigs, ProviderError, ProviderKind};
pub(crate) use scripted::Scripted;

use crate::domain::{Message, ToolCall, ToolSpec, Usage};

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
    /// A tool call whose arguments are not valid JSON. `call.args` holds
    /// the raw argument text as a JSON string; the agent loop answers the
    /// call with an error result, so the model can try again.
    InvalidToolCall {
        call: ToolCall,
        error: String,
    },
    /// Why the model ended the step, when the provider says (before usage).
    Finish(StopReason),
    /// Tokens used by the step; the last event.
    Usage(Usage),
}

impl ModelEvent {
    /// A call whose arguments a provider streamed as JSON text: with the
    /// arguments `blank` gives when the text is blank, else with the text
    /// parsed, or an [`ModelEvent::InvalidToolCall`] when it does not parse.
    pub(crate) fn call_from_json(
        id: String,
        name: String,
        json: String,
        blank: impl FnOnce() -> serde_json::Value,
    ) -> Self {
        if json.trim().is_empty() {
            return Self::ToolCall(ToolCall {
                id,
                name,
                args: blank().into(),
            });
        }
        match serde_json::from_str::<serde_json::Value>(&json) {
            Ok(args) => Self::ToolCall(ToolCall {
                id,
                name,
                args: args.into(),
            }),
            Err(error) => Self::InvalidToolCall {
                call: ToolCall {
                    id,
                    name,
                    args: serde_json::Value::String(json).into(),
                },
                error: error.to_string(),
            },
        }
    }
}

/// Why a model ended its step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The answer is complete.
    EndTurn,
    /// The model called tools.
    ToolCalls,
    /// The output token limit cut the answer short.
    MaxTokens,
    /// The provider withheld or refused content.
    ContentFilter,
    /// Another reason, as the provider named it.
    Other(String),
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(args: serde_json::Value) -> ModelEvent {
        ModelEvent::ToolCall(ToolCall {
            id: "c1".into(),
            name: "f".into(),
            args: args.into(),
        })
    }

    #[test]
    fn streamed_arguments_become_a_call_or_an_invalid_call() {
        let from =
            |json: &str| ModelEvent::call_from_json("c1".into(), "f".into(), json.into(), || json!("blank"));
        assert_eq!(from(" \n"), call(json!("blank")));
        assert_eq!(from(r#"{"a": 1}"#), call(json!({"a": 1})));
        let ModelEvent::InvalidToolCall { call, error } = from(r#"{"a": "#) else {
            panic!("not an invalid call");
        };
        assert_eq!(*call.args, json!(r#"{"a": "#));
        assert!(!error.is_empty());
    }
}
