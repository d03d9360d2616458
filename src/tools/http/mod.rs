//! HTTP tools: a configured endpoint that the agent calls with the
//! validated arguments (a JSON body, or query parameters for GET). The
//! model gets the response body, cut to a configured size; a non-2xx answer,
//! a timeout or an unreachable server is an error result, never a failed
//! run. Only tools marked idempotent are retried. Header values (which may
//! hold secrets) are never logged.

mod call;
mod config;

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde_json::Value;

pub use config::{HttpMethod, HttpToolConfig, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TIMEOUT};

use super::secrets::SecretMap;
use super::{Tool, ToolContext, ToolOutcome};
use crate::domain::ToolSpec;

/// A configured HTTP tool, ready to call.
pub struct HttpTool {
    spec: ToolSpec,
    client: reqwest::Client,
    method: HttpMethod,
    url: reqwest::Url,
    /// Marked sensitive, so that they are never printed.
    headers: HeaderMap,
    timeout: Duration,
    max_response_bytes: usize,
    /// Zero unless the tool is idempotent.
    retries: u32,
}

impl std::fmt::Debug for HttpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTool")
            .field("name", &self.spec.name)
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl HttpTool {
    /// Builds the tool from its configuration: the URL must be http(s), and
    /// every header must be valid once its `${NAME}` references are
    /// resolved. Errors name the field, never a header's value.
    pub fn new(config: &HttpToolConfig, client: reqwest::Client) -> Result<Self, String> {
        let url = reqwest::Url::parse(&config.url).map_err(|e| format!("url: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "url: the scheme must be http or https, not {}",
                url.scheme()
            ));
        }
        let timeout = config.timeout()?;
        if config.max_response_bytes == 0 {
            return Err("max_response_bytes: must be at least 1".into());
        }
        let headers: HeaderMap = SecretMap::resolve(&config.headers, "headers")?.to_headers()?;
        Ok(Self {
            spec: ToolSpec {
                name: config.name.clone(),
                description: config.description.clone(),
                input_schema: config.input_schema.clone(),
                source: "http",
                resume_schema: None,
            },
            client,
            method: config.method,
            url,
            headers,
            timeout,
            max_response_bytes: config.max_response_bytes,
            retries: if config.idempotent { config.max_retries } else { 0 },
        })
    }
}

#[async_trait]
impl Tool for HttpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn execute(&self, args: &Value, _ctx: ToolContext) -> ToolOutcome {
        ToolOutcome::Done(self.call(args).await)
    }
}
