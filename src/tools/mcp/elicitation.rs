//! MCP elicitation as agentd's question: a server's request for input
//! becomes the suspension payload of its tool call, and an answer is
//! checked against what the server asked (the form's JSON Schema, or
//! nothing for a URL) before it becomes the response the server receives,
//! exactly as given.

use std::net::IpAddr;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction as McpAction};
use serde_json::{Map, Value};

use crate::domain::{
    clip, Answer, AnswerError, Elicitation, ElicitationAction, ElicitationRequest, ElicitationResponse,
};

/// How many of a form's violations an error lists.
const MAX_VIOLATIONS: usize = 10;
const MAX_MESSAGE: usize = 200;

/// The payload of a call whose server (`server`) asked `request`; the
/// tool goes on from `continuation` once it is answered. A form whose
/// schema agentd cannot check answers against is refused, with why.
pub(super) fn asked(
    server: &str,
    request: ElicitRequestParams,
    continuation: Value,
) -> Result<Elicitation, String> {
    let (message, request) = match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            let schema = match serde_json::to_value(&requested_schema) {
                Ok(Value::Object(schema)) => schema,
                _ => return Err("its form's schema is not a JSON object".to_owned()),
            };
            form_validator(&schema)
                .map_err(|e| format!("its form's schema is not valid JSON Schema: {e}"))?;
            (
                message,
                ElicitationRequest::Form {
                    requested_schema: schema,
                },
            )
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            safe_link(&url)?;
            (message, ElicitationRequest::Url { url })
        }
        _ => return Err("it asked in a mode agentd does not know".to_owned()),
    };
    Ok(Elicitation {
        server: server.to_owned(),
        message,
        request,
        continuation,
    })
}

/// Refuses a request for input whose link no person should be shown (see
/// [`safe_link`]), before anything else happens with it; any other passes.
pub(super) fn refuse_unsafe_link(request: &ElicitRequestParams) -> Result<(), String> {
    match request {
        ElicitRequestParams::UrlElicitationParams { url, .. } => safe_link(url),
        _ => Ok(()),
    }
}

/// Whether `url` may be put before a person to open, on any surface (the
/// inbox, A2A, AG-UI and MCP clients): `https:`, or `http:` to a loopback
/// host (a server on the person's own machine). Anything else (`http:` to
/// another host, `javascript:`, `data:`, `file:`, ...) is refused, with why.
fn safe_link(url: &str) -> Result<(), String> {
    let shown = clip(url.to_owned(), MAX_MESSAGE);
    let parsed =
        reqwest::Url::parse(url).map_err(|error| format!("its URL {shown:?} is not a URL: {error}"))?;
    let host = parsed.host_str().unwrap_or_default();
    let loopback = match host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        Ok(address) => address.is_loopback(),
        Err(_) => {
            let name = host.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
    };
    match parsed.scheme() {
        "https" if !host.is_empty() => Ok(()),
        "http" if loopback => Ok(()),
        scheme => Err(format!(
            "its URL {shown:?} is not one to open: a link must be https: (or http: to a loopback host), \
             not {scheme}:"
        )),
    }
}

/// Checks `answer` against what `elicitation` asked, without changing
/// anything: an elicitation response; with `accept` of a form, content
/// that the form's schema accepts (each violation named by its field,
/// `elicitation.content.NAME`); no content otherwise.
pub fn check_response(elicitation: &Elicitation, answer: &Answer) -> Result<(), AnswerError> {
    let Answer::Elicitation(response) = answer else {
        return Err(AnswerError::new(
            answer.field(),
            format!(
                "this call is a request for input from the MCP server {}: answer it with elicitation",
                elicitation.server
            ),
        ));
    };
    match (&elicitation.request, response.action, &response.content) {
        (ElicitationRequest::Form { requested_schema }, ElicitationAction::Accept, content) => {
            let content = content.clone().unwrap_or_default();
            check_form(requested_schema, content)
        }
        (ElicitationRequest::Url { .. }, ElicitationAction::Accept, Some(content)) if !content.is_empty() => {
            Err(AnswerError::new(
                "elicitation.content",
                "a URL request is accepted without content: the person gives it on the page",
            ))
        }
        (_, ElicitationAction::Decline | ElicitationAction::Cancel, Some(content)) if !content.is_empty() => {
            Err(AnswerError::new(
                "elicitation.content",
                format!("{} carries no content", response.action.as_str()),
            ))
        }
        _ => Ok(()),
    }
}

/// The validator of a form's values: formats (`email`, `uri`, `date`,
/// `date-time`) are checked too.
fn form_validator(
    schema: &Map<String, Value>,
) -> Result<jsonschema::Validator, jsonschema::ValidationError<'static>> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(&Value::Object(schema.clone()))
}

fn check_form(schema: &Map<String, Value>, content: Map<String, Value>) -> Result<(), AnswerError> {
    let validator = form_validator(schema)
        .map_err(|e| AnswerError::new("elicitation", format!("the form's schema cannot be checked: {e}")))?;
    let content = Value::Object(content);
    if validator.is_valid(&content) {
        return Ok(());
    }
    let violations: Vec<(String, String)> = validator
        .iter_errors(&content)
        .take(MAX_VIOLATIONS)
        .map(|error| {
            let pointer = error.instance_path().to_string();
            let field = match (pointer.as_str(), error.kind()) {
                ("", jsonschema::error::ValidationErrorKind::Required { property }) => {
                    format!("elicitation.content.{}", property.as_str().unwrap_or_default())
                }
                ("", _) => "elicitation.content".to_owned(),
                (pointer, _) => format!("elicitation.content{}", pointer.replace('/', ".")),
            };
            (clip(field, MAX_MESSAGE), clip(error.to_string(), MAX_MESSAGE))
        })
        .collect();
    let listed: Vec<String> = violations
        .iter()
        .map(|(field, problem)| format!("{field}: {problem}"))
        .collect();
    Err(AnswerError::new(
        "elicitation.content",
        format!("does not fit the form: {}", listed.join("; ")),
    )
    .with_violations(violations))
}

/// The response the server receives for `response`.
pub(super) fn result(response: &ElicitationResponse) -> ElicitResult {
    let action = match response.action {
        ElicitationAction::Accept => McpAction::Accept,
        ElicitationAction::Decline => McpAction::Decline,
        ElicitationAction::Cancel => McpAction::Cancel,
    };
    let mut result = ElicitResult::new(action);
    if response.action == ElicitationAction::Accept {
        if let Some(content) = &response.content {
            result = result.with_content(Value::Object(content.clone()));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn form(schema: Value) -> Elicitation {
        let Value::Object(requested_schema) = schema else {
            panic!("a schema is an object")
        };
        Elicitation {
            server: "travel".into(),
            message: "Where to?".into(),
            request: ElicitationRequest::Form { requested_schema },
            continuation: Value::Null,
        }
    }

    fn accept(content: Value) -> Answer {
        let Value::Object(content) = content else {
            panic!("content is an object")
        };
        Answer::Elicitation(ElicitationResponse {
            action: ElicitationAction::Accept,
            content: Some(content),
        })
    }

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "email": {"type": "string", "format": "email"},
                "nights": {"type": "integer", "minimum": 1},
                "class": {"type": "string", "enum": ["economy", "business"]},
            },
            "required": ["email", "nights"],
        })
    }

    #[test]
    fn only_safe_links_are_asked() {
        for url in [
            "https://pay.example.com/checkout?amount=30",
            "http://127.0.0.1:8080/pay",
            "http://127.8.0.1/pay",
            "http://localhost:3000/",
            "http://app.localhost/",
            "http://[::1]:9000/pay",
        ] {
            assert_eq!(safe_link(url), Ok(()), "{url}");
        }
        for url in [
            "javascript:alert(document.cookie)",
            "JavaScript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "http://pay.example.com/",
            "http://10.0.0.1/",
            "ftp://localhost/",
            "vbscript:msgbox",
            "not a url",
            "",
        ] {
            let refused = safe_link(url).expect_err(url);
            assert!(refused.contains("its URL"), "{refused}");
        }
        let asked = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: "Pay".into(),
            url: "javascript:alert(1)".into(),
            elicitation_id: "pay-1".into(),
        };
        assert!(refuse_unsafe_link(&asked).is_err());
        assert!(asked_payload(asked).is_err(), "nothing is suspended with it");
    }

    fn asked_payload(request: ElicitRequestParams) -> Result<Elicitation, String> {
        asked("pay", request, json!(null))
    }

    #[test]
    fn a_form_answer_that_fits_is_accepted() {
        let answer = accept(json!({"email": "ana@example.com", "nights": 2, "class": "economy"}));
        assert_eq!(check_response(&form(schema()), &answer), Ok(()));
    }

    #[test]
    fn every_field_at_fault_is_named() {
        let answer = accept(json!({"email": "not an address", "nights": 0, "class": "first"}));
        let error = check_response(&form(schema()), &answer).expect_err("three faults");
        let fields: Vec<&str> = error.violations.iter().map(|(field, _)| field.as_str()).collect();
        assert!(fields.contains(&"elicitation.content.email"), "{fields:?}");
        assert!(fields.contains(&"elicitation.content.nights"), "{fields:?}");
        assert!(fields.contains(&"elicitation.content.class"), "{fields:?}");
        assert_eq!(error.field, "elicitation.content");
    }

    #[test]
    fn decline_and_cancel_carry_no_content() {
        for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            let bare = Answer::Elicitation(ElicitationResponse {
                action,
                content: None,
            });
            assert_eq!(check_response(&form(schema()), &bare), Ok(()));
            let with_content = Answer::Elicitation(ElicitationResponse {
                action,
                content: Some(Map::from_iter([("email".to_owned(), json!("a@b.c"))])),
            });
            assert!(check_response(&form(schema()), &with_content).is_err());
        }
    }

    #[test]
    fn a_url_request_is_accepted_without_content() {
        let url = Elicitation {
            request: ElicitationRequest::Url {
                url: "https://example.com/pay".into(),
            },
            ..form(schema())
        };
        assert_eq!(check_response(&url, &accept(json!({}))), Ok(()));
        assert!(check_response(&url, &accept(json!({"card": "4111"}))).is_err());
    }

    #[test]
    fn other_answers_are_refused_with_the_field_to_use() {
        let error = check_response(&form(schema()), &Answer::Text("yes".into())).expect_err("text");
        assert_eq!(error.field, "text");
        assert!(
            error.reason.contains("answer it with elicitation"),
            "{}",
            error.reason
        );
    }

    #[test]
    fn the_server_receives_the_response_as_given() {
        let answer = ElicitationResponse {
            action: ElicitationAction::Accept,
            content: Some(Map::from_iter([("nights".to_owned(), json!(3))])),
        };
        let sent = serde_json::to_value(result(&answer)).expect("serializes");
        assert_eq!(sent, json!({"action": "accept", "content": {"nights": 3}}));
        let declined = ElicitationResponse {
            action: ElicitationAction::Decline,
            content: None,
        };
        assert_eq!(
            serde_json::to_value(result(&declined)).expect("serializes"),
            json!({"action": "decline"})
        );
    }
}
