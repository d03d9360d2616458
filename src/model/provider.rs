//! Model providers as `agentd.toml` declares them (`[providers.NAME]`), and
//! the settings a provider runs with once defaults are filled in. Two
//! providers exist without any configuration: `openai` and `anthropic`.
//! Reading an API key from the environment happens here; nothing here
//! talks to the network.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::config::duration;
use crate::config::settings::renamed_key;

/// The `[providers]` tables, by name.
pub type ProviderConfigs = BTreeMap<String, ProviderConfig>;

/// The wire protocol a provider speaks.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions, also served by Ollama, vLLM, llama.cpp's
    /// server, LM Studio and other compatible endpoints.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Openai => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com",
        }
    }
}

/// One `[providers.NAME]` table. Every field may be left out for the
/// built-in `openai` and `anthropic`; another name needs `kind` and
/// `base_url`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// `openai` or `anthropic` (default: the provider's name, for those two).
    pub kind: Option<ProviderKind>,
    /// The API root, e.g. `http://localhost:11434/v1`.
    pub base_url: Option<String>,
    /// The environment variable holding the API key; without one no key
    /// is sent (local servers need none). The built-in providers read
    /// `OPENAI_API_KEY` and `ANTHROPIC_API_KEY`.
    pub api_key_env: Option<String>,
    /// How long establishing a connection may take (default 10s).
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub connect_timeout: Option<Duration>,
    /// How long from sending a request to the response's first byte
    /// (default 60s).
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub first_byte_timeout: Option<Duration>,
    /// How long the stream may stay silent between two chunks (default 2m).
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub idle_timeout: Option<Duration>,
    /// Retries of a request answered 429 or 5xx, or that could not
    /// connect, before any of its stream was read (default 2).
    pub max_retries: Option<u32>,
    /// The wait before the first retry when the provider gives no
    /// Retry-After; doubled each time, with jitter (default 500ms).
    #[serde(default, deserialize_with = "duration::deserialize_option")]
    pub retry_backoff: Option<Duration>,
    /// Output tokens a step may produce. Anthropic requires it (default
    /// 4096); for OpenAI-compatible providers it is sent only when set.
    pub max_tokens: Option<u32>,
    /// Deprecated spelling of `connect_timeout`, in seconds.
    pub connect_timeout_secs: Option<f64>,
    /// Deprecated spelling of `first_byte_timeout`, in seconds.
    pub first_byte_timeout_secs: Option<f64>,
    /// Deprecated spelling of `idle_timeout`, in seconds.
    pub idle_timeout_secs: Option<f64>,
    /// Deprecated spelling of `retry_backoff`, in seconds.
    pub retry_backoff_secs: Option<f64>,
}

impl ProviderConfig {
    /// The table with each timeout given under its deprecated name (a
    /// number of seconds) moved to its current one, with a warning; both
    /// names in one table are an error.
    pub fn fold_deprecated(&self, name: &str) -> Result<ProviderConfig, ProviderError> {
        let fold = |key: &'static str, value: Option<Duration>, old: &'static str, secs: Option<f64>| {
            let deprecated = secs
                .map(|secs| {
                    Duration::try_from_secs_f64(secs).map_err(|_| ProviderError::BadDuration {
                        name: name.to_owned(),
                        field: old,
                    })
                })
                .transpose()?;
            renamed_key(format!("[providers.{name}]"), key, value, old, deprecated).map_err(|error| {
                ProviderError::Setting {
                    name: name.to_owned(),
                    message: error.to_string(),
                }
            })
        };
        Ok(ProviderConfig {
            connect_timeout: fold(
                "connect_timeout",
                self.connect_timeout,
                "connect_timeout_secs",
                self.connect_timeout_secs,
            )?,
            first_byte_timeout: fold(
                "first_byte_timeout",
                self.first_byte_timeout,
                "first_byte_timeout_secs",
                self.first_byte_timeout_secs,
            )?,
            idle_timeout: fold(
                "idle_timeout",
                self.idle_timeout,
                "idle_timeout_secs",
                self.idle_timeout_secs,
            )?,
            retry_backoff: fold(
                "retry_backoff",
                self.retry_backoff,
                "retry_backoff_secs",
                self.retry_backoff_secs,
            )?,
            connect_timeout_secs: None,
            first_byte_timeout_secs: None,
            idle_timeout_secs: None,
            retry_backoff_secs: None,
            ..self.clone()
        })
    }
}

/// A provider's settings with every default filled in.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ProviderSettings {
    pub name: String,
    pub kind: ProviderKind,
    /// Without a trailing slash.
    pub base_url: String,
    pub api_key_env: Option<String>,
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_retries: u32,
    pub retry_backoff: Duration,
    pub max_tokens: Option<u32>,
}

pub(super) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
pub(super) const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);
pub(super) const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
pub(super) const DEFAULT_MAX_RETRIES: u32 = 2;
pub(super) const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(500);
pub(super) const DEFAULT_ANTHROPIC_MAX_TOKENS: u32 = 4096;

/// A provider table that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProviderError {
    #[error("unknown provider {0:?} (built in: openai, anthropic; others need a [providers.{0}] table)")]
    Unknown(String),
    #[error("provider {0:?}: `kind` is required (\"openai\" or \"anthropic\")")]
    MissingKind(String),
    #[error("provider {0:?}: `base_url` is required")]
    MissingBaseUrl(String),
    #[error("provider {name:?}: base_url {url:?} must start with http:// or https://")]
    BadBaseUrl { name: String, url: String },
    #[error("provider {name:?}: {field} must be more than zero")]
    BadDuration { name: String, field: &'static str },
    #[error("provider {name:?}: {message}")]
    Setting { name: String, message: String },
}

fn built_in(name: &str) -> Option<(ProviderKind, &'static str)> {
    match name {
        "openai" => Some((ProviderKind::Openai, "OPENAI_API_KEY")),
        "anthropic" => Some((ProviderKind::Anthropic, "ANTHROPIC_API_KEY")),
        _ => None,
    }
}

/// A timeout as configured, else its default; it must be more than zero.
fn positive(
    name: &str,
    field: &'static str,
    value: Option<Duration>,
    default: Duration,
) -> Result<Duration, ProviderError> {
    match value.unwrap_or(default) {
        Duration::ZERO => Err(ProviderError::BadDuration {
            name: name.to_owned(),
            field,
        }),
        duration => Ok(duration),
    }
}

impl ProviderSettings {
    /// The settings of the provider called `name`: its table if there is
    /// one, over the built-in defaults of `openai` and `anthropic`. The API
    /// key is read from the environment now.
    pub(crate) fn resolve(name: &str, configs: &ProviderConfigs) -> Result<Self, ProviderError> {
        let builtin = built_in(name);
        let config = match (configs.get(name), builtin) {
            (Some(config), _) => config.fold_deprecated(name)?,
            (None, Some(_)) => ProviderConfig::default(),
            (None, None) => return Err(ProviderError::Unknown(name.to_owned())),
        };
        let kind = config
            .kind
            .or(builtin.map(|(kind, _)| kind))
            .ok_or_else(|| ProviderError::MissingKind(name.to_owned()))?;
        let base_url = match (&config.base_url, builtin) {
            (Some(url), _) => url.trim_end_matches('/').to_owned(),
            (None, Some((builtin_kind, _))) if builtin_kind == kind => kind.default_base_url().to_owned(),
            (None, _) => return Err(ProviderError::MissingBaseUrl(name.to_owned())),
        };
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ProviderError::BadBaseUrl {
                name: name.to_owned(),
                url: crate::config::redact(&base_url).into_owned(),
            });
        }
        // A key is only read from a variable the configuration names, or
        // the built-in one of openai/anthropic: a custom endpoint never
        // receives another provider's key by default.
        let api_key_env = config.api_key_env.clone().or(builtin
            .filter(|(builtin_kind, _)| *builtin_kind == kind)
            .map(|(_, env)| env.to_owned()));
        let api_key = api_key_env
            .as_deref()
            .and_then(|var| std::env::var(var).ok())
            .filter(|key| !key.trim().is_empty());
        let max_tokens = match kind {
            ProviderKind::Anthropic => Some(config.max_tokens.unwrap_or(DEFAULT_ANTHROPIC_MAX_TOKENS)),
            ProviderKind::Openai => config.max_tokens,
        };
        Ok(Self {
            name: name.to_owned(),
            kind,
            base_url,
            api_key_env,
            api_key,
            connect_timeout: positive(
                name,
                "connect_timeout",
                config.connect_timeout,
                DEFAULT_CONNECT_TIMEOUT,
            )?,
            first_byte_timeout: positive(
                name,
                "first_byte_timeout",
                config.first_byte_timeout,
                DEFAULT_FIRST_BYTE_TIMEOUT,
            )?,
            idle_timeout: positive(name, "idle_timeout", config.idle_timeout, DEFAULT_IDLE_TIMEOUT)?,
            max_retries: config.max_retries.unwrap_or(DEFAULT_MAX_RETRIES),
            retry_backoff: positive(name, "retry_backoff", config.retry_backoff, DEFAULT_RETRY_BACKOFF)?,
            max_tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(toml_text: &str) -> ProviderConfigs {
        toml::from_str(toml_text).expect("valid provider tables")
    }

    #[test]
    fn built_in_providers_need_no_table() {
        let openai = ProviderSettings::resolve("openai", &ProviderConfigs::new()).unwrap();
        assert_eq!(openai.kind, ProviderKind::Openai);
        assert_eq!(openai.base_url, "https://api.openai.com/v1");
        assert_eq!(openai.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(openai.max_tokens, None);
        let anthropic = ProviderSettings::resolve("anthropic", &ProviderConfigs::new()).unwrap();
        assert_eq!(anthropic.base_url, "https://api.anthropic.com");
        assert_eq!(anthropic.max_tokens, Some(DEFAULT_ANTHROPIC_MAX_TOKENS));
        assert_eq!(anthropic.idle_timeout, Duration::from_secs(120));
    }

    #[test]
    fn a_custom_provider_reads_only_its_own_key_variable() {
        let configs = configs(
            r#"
            [ollama]
            kind = "openai"
            base_url = "http://localhost:11434/v1/"
            idle_timeout = "250ms"
            max_retries = 0
            "#,
        );
        let ollama = ProviderSettings::resolve("ollama", &configs).unwrap();
        assert_eq!(ollama.base_url, "http://localhost:11434/v1");
        assert_eq!(ollama.api_key_env, None);
        assert_eq!(ollama.api_key, None);
        assert_eq!(ollama.idle_timeout, Duration::from_millis(250));
        assert_eq!(ollama.max_retries, 0);
    }

    #[test]
    fn the_key_comes_from_the_named_variable() {
        // Cargo sets CARGO_PKG_NAME for the test process.
        let configs = configs("[local]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:9\"\napi_key_env = \"CARGO_PKG_NAME\"");
        let local = ProviderSettings::resolve("local", &configs).unwrap();
        assert_eq!(local.api_key.as_deref(), Some("agentd"));
    }

    #[test]
    fn unusable_tables_are_rejected() {
        let none = ProviderConfigs::new();
        assert_eq!(
            ProviderSettings::resolve("vllm", &none),
            Err(ProviderError::Unknown("vllm".into()))
        );
        let no_kind = configs("[vllm]\nbase_url = \"http://x\"");
        assert_eq!(
            ProviderSettings::resolve("vllm", &no_kind),
            Err(ProviderError::MissingKind("vllm".into()))
        );
        let no_url = configs("[vllm]\nkind = \"openai\"");
        assert_eq!(
            ProviderSettings::resolve("vllm", &no_url),
            Err(ProviderError::MissingBaseUrl("vllm".into()))
        );
        let bad_url = configs("[vllm]\nkind = \"openai\"\nbase_url = \"localhost:8000\"");
        assert!(matches!(
            ProviderSettings::resolve("vllm", &bad_url),
            Err(ProviderError::BadBaseUrl { .. })
        ));
        let bad_timeout = configs("[openai]\nidle_timeout_secs = -1");
        assert!(matches!(
            ProviderSettings::resolve("openai", &bad_timeout),
            Err(ProviderError::BadDuration {
                field: "idle_timeout_secs",
                ..
            })
        ));
        let zero_timeout = configs("[openai]\nidle_timeout = \"0s\"");
        assert!(matches!(
            ProviderSettings::resolve("openai", &zero_timeout),
            Err(ProviderError::BadDuration {
                field: "idle_timeout",
                ..
            })
        ));
        assert!(toml::from_str::<ProviderConfigs>("[openai]\nidle_timeout = \"2\"").is_err());
    }

    #[test]
    fn deprecated_seconds_still_count_but_not_beside_the_new_key() {
        let old = configs("[openai]\nidle_timeout_secs = 0.25\nretry_backoff_secs = 2");
        let openai = ProviderSettings::resolve("openai", &old).unwrap();
        assert_eq!(openai.idle_timeout, Duration::from_millis(250));
        assert_eq!(openai.retry_backoff, Duration::from_secs(2));
        let both = configs("[openai]\nidle_timeout_secs = 1\nidle_timeout = \"1s\"");
        assert!(matches!(
            ProviderSettings::resolve("openai", &both),
            Err(ProviderError::Setting { .. })
        ));
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(toml::from_str::<ProviderConfigs>("[x]\nkind = \"openai\"\nbase = \"y\"").is_err());
        assert!(toml::from_str::<ProviderConfigs>("[x]\nkind = \"gemini\"").is_err());
    }
}
