//! How a model step fails: a stable code that says what kind of failure it
//! was (streamed to clients as the run error's `code`) and the provider's
//! own words. Carries no transport types, so the agent loop and the runtime
//! can match on it without knowing HTTP.

/// What kind of failure a [`ModelError`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelErrorCode {
    /// The provider refused the request or failed while answering it.
    Provider,
    /// The provider kept answering 429 (after the retries allowed).
    RateLimited,
    /// The provider rejected the credentials (401 or 403).
    Authentication,
    /// Connecting, the first byte or the gap between two chunks took too long.
    Timeout,
    /// The provider could not be reached, or the connection broke.
    Connection,
    /// The provider's answer does not follow its wire format.
    InvalidResponse,
}

impl ModelErrorCode {
    /// The code as clients see it in a run `error` chunk.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelErrorCode::Provider => "provider_error",
            ModelErrorCode::RateLimited => "rate_limited",
            ModelErrorCode::Authentication => "authentication_failed",
            ModelErrorCode::Timeout => "timeout",
            ModelErrorCode::Connection => "connection_failed",
            ModelErrorCode::InvalidResponse => "invalid_response",
        }
    }
}

impl std::fmt::Display for ModelErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of the model provider.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    pub code: ModelErrorCode,
    pub message: String,
}

impl ModelError {
    pub fn new(code: ModelErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn provider(message: impl Into<String>) -> Self {
        Self::new(ModelErrorCode::Provider, message)
    }

    pub fn invalid_response(message: impl Into<String>) -> Self {
        Self::new(ModelErrorCode::InvalidResponse, message)
    }

    /// The code as clients see it.
    pub fn code(&self) -> &'static str {
        self.code.as_str()
    }
}
