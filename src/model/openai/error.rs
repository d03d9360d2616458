//! OpenAI's error format, `{"error": {"message", "type", "code"}}`, in a
//! refused request's body or in a chunk of the stream. Compatible servers
//! that answer in another shape fall back to the transport's reading.

use serde_json::Value;

use crate::model::http::fallback_message;
use crate::model::ModelError;

/// The message of an error object, with its code when it has one.
fn message_of(error: &Value) -> Option<String> {
    let message = error.get("message")?.as_str()?;
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str));
    Some(match code {
        Some(code) if !code.is_empty() => format!("{message} ({code})"),
        _ => message.to_owned(),
    })
}

/// Reads the provider's message from an error body.
pub(super) fn describe(body: &str) -> Option<String> {
    let json: Value = serde_json::from_str(body).ok()?;
    message_of(json.get("error")?)
}

/// The failure an `error` chunk in the stream reports.
pub(super) fn stream_error(provider: &str, error: &Value) -> ModelError {
    let message = message_of(error)
        .or_else(|| error.as_str().map(str::to_owned))
        .unwrap_or_else(|| fallback_message(&error.to_string(), reqwest::StatusCode::OK));
    ModelError::provider(format!(
        "{provider} reported an error during the stream: {message}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_carry_their_code() {
        let body = r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        assert_eq!(
            describe(body).as_deref(),
            Some("Incorrect API key provided. (invalid_api_key)")
        );
        assert_eq!(describe(r#"{"error":"nope"}"#), None);
        let error = stream_error("p", &json!("busy"));
        assert_eq!(error.message, "p reported an error during the stream: busy");
    }
}
