//! Builds the model an agent's `model` setting names: `scripted`, or
//! `PROVIDER:MODEL` such as `openai:gpt-4o-mini`, `anthropic:claude-...` or
//! `ollama:llama3.2:3b` for a configured `[providers.ollama]` (the model is
//! everything after the first colon). Agents on one provider share its
//! HTTP client and connection pool.

use std::collections::HashMap;
use std::sync::Arc;

use super::anthropic::AnthropicMessages;
use super::http::{chain, Transport};
use super::openai::OpenAiChat;
use super::provider::ProviderError;
use super::{LanguageModel, ProviderConfigs, ProviderKind, ProviderSettings, Scripted};

/// A `model` setting that names no usable model.
#[derive(Debug, thiserror::Error)]
pub enum ModelConfigError {
    #[error("unknown model {0:?}: use \"scripted\" or PROVIDER:MODEL, e.g. \"openai:gpt-4o-mini\"")]
    Unknown(String),
    #[error("model {0:?} names a provider but no model after the colon")]
    MissingModel(String),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("provider {name:?}: cannot build its HTTP client: {message}")]
    Client { name: String, message: String },
}

/// Builds models from their names, reusing one client per provider.
pub(crate) struct ModelCatalog {
    configs: ProviderConfigs,
    transports: HashMap<String, Arc<Transport>>,
}

impl ModelCatalog {
    /// A catalog over the `[providers]` tables; every table is checked now,
    /// used or not, and its deprecated spellings folded in once (so that
    /// each warns once).
    pub(crate) fn new(configs: &ProviderConfigs) -> Result<Self, ModelConfigError> {
        let mut folded = ProviderConfigs::new();
        for (name, config) in configs {
            folded.insert(name.clone(), config.fold_deprecated(name)?);
        }
        for name in folded.keys() {
            ProviderSettings::resolve(name, &folded)?;
        }
        Ok(Self {
            configs: folded,
            transports: HashMap::new(),
        })
    }

    /// The model `spec` names.
    pub(crate) fn model(&mut self, spec: &str) -> Result<Arc<dyn LanguageModel>, ModelConfigError> {
        if spec == "scripted" {
            return Ok(Arc::new(Scripted));
        }
        let Some((provider, model)) = spec.split_once(':') else {
            return Err(ModelConfigError::Unknown(spec.to_owned()));
        };
        if model.trim().is_empty() {
            return Err(ModelConfigError::MissingModel(spec.to_owned()));
        }
        let transport = self.transport(provider)?;
        Ok(match transport.settings().kind {
            ProviderKind::Openai => Arc::new(OpenAiChat::new(spec, model, transport)),
            ProviderKind::Anthropic => Arc::new(AnthropicMessages::new(spec, model, transport)),
        })
    }

    fn transport(&mut self, provider: &str) -> Result<Arc<Transport>, ModelConfigError> {
        if let Some(transport) = self.transports.get(provider) {
            return Ok(Arc::clone(transport));
        }
        let settings = ProviderSettings::resolve(provider, &self.configs)?;
        if let (None, Some(var)) = (&settings.api_key, &settings.api_key_env) {
            tracing::warn!(
                provider,
                "the environment variable {var} is not set: requests to {provider} carry no API key"
            );
        }
        let transport = Transport::new(settings).map_err(|error| ModelConfigError::Client {
            name: provider.to_owned(),
            message: chain(&error),
        })?;
        let transport = Arc::new(transport);
        self.transports
            .insert(provider.to_owned(), Arc::clone(&transport));
        Ok(transport)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(toml_text: &str) -> ModelCatalog {
        ModelCatalog::new(&toml::from_str(toml_text).unwrap()).unwrap()
    }

    #[test]
    fn names_resolve_to_their_provider() {
        let mut models = catalog("[ollama]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:11434/v1\"");
        assert_eq!(models.model("scripted").unwrap().name(), "scripted");
        assert_eq!(
            models.model("openai:gpt-4o-mini").unwrap().name(),
            "openai:gpt-4o-mini"
        );
        assert_eq!(
            models.model("anthropic:claude-sonnet-4-5").unwrap().name(),
            "anthropic:claude-sonnet-4-5"
        );
        assert_eq!(
            models.model("ollama:llama3.2:3b").unwrap().name(),
            "ollama:llama3.2:3b"
        );
        models.model("ollama:qwen3").unwrap();
        assert_eq!(models.transports.len(), 3, "one client per provider");
    }

    #[test]
    fn bad_names_are_explained() {
        let mut models = catalog("");
        assert!(matches!(
            models.model("gpt-4o"),
            Err(ModelConfigError::Unknown(_))
        ));
        assert!(matches!(
            models.model("openai:"),
            Err(ModelConfigError::MissingModel(_))
        ));
        let error = models.model("ollama:llama3").err().expect("unknown provider");
        assert!(error.to_string().contains("[providers.ollama]"), "{error}");
    }

    #[test]
    fn every_table_is_checked_even_unused() {
        let configs = toml::from_str("[vllm]\nkind = \"openai\"").unwrap();
        assert!(matches!(
            ModelCatalog::new(&configs),
            Err(ModelConfigError::Provider(ProviderError::MissingBaseUrl(_)))
        ));
    }
}
