//! Anthropic's error format, `{"type": "error", "error": {"type",
//! "message"}}`, in a refused request's body or as an `error` event in the
//! stream (e.g. `overloaded_error` after the stream began).

use serde::Deserialize;

use crate::model::{ModelError, ModelErrorCode};

/// The `error` object.
#[derive(Debug, Deserialize)]
pub(super) struct ErrorWire {
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

impl ErrorWire {
    fn text(&self) -> String {
        if self.kind.is_empty() {
            self.message.clone()
        } else {
            format!("{} ({})", self.message, self.kind)
        }
    }
}

#[derive(Deserialize)]
struct BodyWire {
    error: ErrorWire,
}

/// Reads the provider's message from an error body.
pub(super) fn describe(body: &str) -> Option<String> {
    let body: BodyWire = serde_json::from_str(body).ok()?;
    Some(body.error.text())
}

/// The failure an `error` event in the stream reports.
pub(super) fn stream_error(provider: &str, error: &ErrorWire) -> ModelError {
    let code = match error.kind.as_str() {
        "rate_limit_error" => ModelErrorCode::RateLimited,
        "authentication_error" | "permission_error" => ModelErrorCode::Authentication,
        _ => ModelErrorCode::Provider,
    };
    ModelError::new(
        code,
        format!("{provider} reported an error during the stream: {}", error.text()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_carry_their_type() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"}}"#;
        assert_eq!(
            describe(body).as_deref(),
            Some("max_tokens: must be positive (invalid_request_error)")
        );
        assert_eq!(describe("<html>"), None);
    }
}
