//! `[[tools]]` entries with `kind = "http"` in `agentd.toml`: an HTTP
//! endpoint the agent calls with the validated arguments. Only the
//! configuration's shape and defaults live here; `Debug` never prints
//! header values, which may hold secrets.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::config::settings::timeout_key;
use crate::domain::any_object;

/// How long an HTTP tool waits for a response when not configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of a response body given to the model when not configured.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// Retries of an idempotent tool when not configured.
pub(super) const DEFAULT_MAX_RETRIES: u32 = 2;

/// How the arguments are sent.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    /// Arguments as query parameters.
    Get,
    /// Arguments as a JSON body (the default).
    #[default]
    Post,
    Put,
    Patch,
    Delete,
}

/// An HTTP tool as configured.
#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpToolConfig {
    /// The name the model calls it by.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input (default: any object).
    #[serde(default = "any_object")]
    pub input_schema: Value,
    /// `http://` or `https://` URL.
    pub url: String,
    #[serde(default)]
    pub method: HttpMethod,
    /// Request headers; values may reference environment variables as
    /// `${NAME}`, resolved at start-up.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How long one attempt may take, response body included (`"5s"`;
    /// default [`DEFAULT_TIMEOUT`]).
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub timeout: Option<Duration>,
    /// Deprecated spelling of `timeout`, in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Longer response bodies are cut, with a marker saying so.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: usize,
    /// Safe to send twice: only idempotent tools are retried (after a
    /// connection failure or a 5xx answer).
    #[serde(default)]
    pub idempotent: bool,
    /// Retries of an idempotent tool.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
}

fn default_max_response_bytes() -> usize {
    DEFAULT_MAX_RESPONSE_BYTES
}

fn default_max_retries() -> u32 {
    DEFAULT_MAX_RETRIES
}

impl fmt::Debug for HttpToolConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&String> = self.headers.keys().collect();
        f.debug_struct("HttpToolConfig")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("method", &self.method)
            .field("headers (values redacted)", &header_names)
            .field("timeout", &self.timeout)
            .field("timeout_ms", &self.timeout_ms)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("idempotent", &self.idempotent)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl HttpToolConfig {
    /// How long one attempt may take: `timeout`, its deprecated spelling
    /// `timeout_ms` (with a warning), or the default.
    pub fn timeout(&self) -> Result<Duration, String> {
        let table = format!("[[tools]] {:?}", self.name);
        timeout_key(table, self.timeout, self.timeout_ms, DEFAULT_TIMEOUT)
    }
}
