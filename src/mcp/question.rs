//! A pending call as an MCP elicitation, and the client's answer back as
//! the run's answer. Single-select is a string enum with titled options,
//! multi-select an array of them, free text a string, an approval
//! `{approved, reason?}`; an MCP server's own request for input (a tool of
//! an MCP server that asked) is passed on as the server made it, and the
//! client's response goes back to that server as given. What the answer is
//! worth is not decided here: Resume validates it exactly as it validates
//! an agentd.v1 answer.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{json, Map, Value};

use crate::domain::{
    Answer, AnswerError, AskUserPayload, Elicitation, ElicitationAction as Action, ElicitationRequest,
    ElicitationResponse, PendingCall, SelectionMode, SuspendPayload, Waiting,
};

/// The property of the form that carries a question's answer.
const ANSWER: &str = "answer";

/// What a pending call asks, in the shapes an MCP form can take.
#[derive(Clone, Debug, PartialEq)]
pub enum Question {
    Ask(AskUserPayload),
    Approval {
        tool: String,
        args: String,
    },
    /// An MCP server's request, passed on.
    Elicitation(Elicitation),
}

/// What the client did with the form.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Accepted, with an answer for Resume to check.
    Answer(Answer),
    Declined,
    Cancelled,
}

impl Question {
    /// The question `pending` asks; `None` for a suspension no form can
    /// answer (a custom tool's resume data, a client tool's result).
    pub fn of(pending: &PendingCall) -> Option<Self> {
        match &pending.waiting {
            Waiting::Approval => Some(Self::Approval {
                tool: pending.call.name.clone(),
                args: pending.call.args.json().get().to_owned(),
            }),
            Waiting::Suspended {
                payload: SuspendPayload::AskUser(question),
            } => Some(Self::Ask(question.clone())),
            Waiting::Suspended {
                payload: SuspendPayload::Elicitation(asked),
            } => Some(Self::Elicitation(asked.clone())),
            Waiting::Suspended { .. } => None,
        }
    }

    /// The question as a person reads it.
    pub fn message(&self) -> String {
        match self {
            Self::Ask(question) => question.question.clone(),
            Self::Approval { tool, args } => format!("Approve this call of {tool}? Arguments: {args}"),
            Self::Elicitation(asked) => asked.message.clone(),
        }
    }

    /// The form's JSON schema.
    pub fn schema(&self) -> Value {
        let options = |question: &AskUserPayload| -> Vec<Value> {
            question
                .options
                .iter()
                .map(|option| json!({"const": option.label, "title": option.label}))
                .collect()
        };
        match self {
            Self::Ask(question) => {
                let answer = match question.selection_mode {
                    SelectionMode::FreeText => json!({"type": "string", "title": "Answer"}),
                    SelectionMode::SingleSelect => {
                        json!({"type": "string", "title": "Answer", "oneOf": options(question)})
                    }
                    SelectionMode::MultiSelect => json!({
                        "type": "array",
                        "title": "Answer",
                        "minItems": 1,
                        "items": {"anyOf": options(question)},
                    }),
                };
                json!({"type": "object", "properties": {ANSWER: answer}, "required": [ANSWER]})
            }
            Self::Approval { .. } => json!({
                "type": "object",
                "properties": {
                    "approved": {"type": "boolean", "title": "Approve the call"},
                    "reason": {"type": "string", "title": "Reason (when declining)"},
                },
                "required": ["approved"],
            }),
            Self::Elicitation(asked) => match &asked.request {
                ElicitationRequest::Form { requested_schema } => Value::Object(requested_schema.clone()),
                ElicitationRequest::Url { .. } => json!({"type": "object", "properties": {}}),
            },
        }
    }

    /// The `elicitation/create` parameters that ask this question.
    pub fn elicitation(&self) -> ElicitRequestParams {
        let params = match self {
            Self::Elicitation(Elicitation {
                server,
                request: ElicitationRequest::Url { url },
                ..
            }) => json!({
                "mode": "url",
                "message": self.message(),
                "url": url,
                "elicitationId": format!("{server}:{}", uuid::Uuid::now_v7()),
            }),
            _ => json!({
                "mode": "form",
                "message": self.message(),
                "requestedSchema": self.schema(),
            }),
        };
        // The schema is one of the shapes above, which the type accepts.
        serde_json::from_value(params).expect("a form elicitation")
    }

    /// What `result` (an `ElicitResult`) says, or why it cannot say it.
    pub fn reply(&self, result: &ElicitResult) -> Result<Reply, AnswerError> {
        if let Self::Elicitation(_) = self {
            return passed_back(result);
        }
        match result.action {
            ElicitationAction::Decline => return Ok(Reply::Declined),
            ElicitationAction::Cancel => return Ok(Reply::Cancelled),
            ElicitationAction::Accept => {}
            _ => return Err(AnswerError::new("action", "accept, decline or cancel")),
        }
        let empty = Map::new();
        let content = match &result.content {
            Some(Value::Object(content)) => content,
            None => &empty,
            Some(_) => return Err(AnswerError::new("content", "the content must be an object")),
        };
        let answer = match self {
            Self::Ask(question) => match (question.selection_mode, content.get(ANSWER)) {
                (SelectionMode::MultiSelect, Some(Value::Array(labels))) => {
                    let labels: Option<Vec<String>> = labels
                        .iter()
                        .map(|label| label.as_str().map(str::to_owned))
                        .collect();
                    Answer::Selections(
                        labels.ok_or_else(|| AnswerError::new("content.answer", "labels are strings"))?,
                    )
                }
                (SelectionMode::MultiSelect, _) => {
                    return Err(AnswerError::new("content.answer", "an array of option labels"))
                }
                (_, Some(Value::String(text))) => Answer::Text(text.clone()),
                (_, _) => return Err(AnswerError::new("content.answer", "a string is required")),
            },
            Self::Elicitation(_) => return passed_back(result),
            Self::Approval { .. } => {
                let Some(Value::Bool(approved)) = content.get("approved") else {
                    return Err(AnswerError::new("content.approved", "a boolean is required"));
                };
                let reason = match content.get("reason") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(reason)) => reason.clone(),
                    Some(_) => return Err(AnswerError::new("content.reason", "a string")),
                };
                Answer::Approval {
                    approved: *approved,
                    reason,
                    edited_args: None,
                }
            }
        };
        Ok(Reply::Answer(answer))
    }
}

/// The response to an MCP server's own request, as the client gave it:
/// the server that asked gets it as given, and Resume checks it against
/// the server's form.
fn passed_back(result: &ElicitResult) -> Result<Reply, AnswerError> {
    let action = match result.action {
        ElicitationAction::Accept => Action::Accept,
        ElicitationAction::Decline => Action::Decline,
        _ => Action::Cancel,
    };
    let content = match &result.content {
        None | Some(Value::Null) => None,
        Some(Value::Object(content)) => Some(content.clone()),
        Some(_) => return Err(AnswerError::new("content", "the content must be an object")),
    };
    Ok(Reply::Answer(Answer::Elicitation(ElicitationResponse {
        action,
        content,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AskUserOption;

    fn ask(mode: SelectionMode) -> Question {
        Question::Ask(AskUserPayload {
            question: "Which?".into(),
            options: ["Pro", "Basic"]
                .map(|label| AskUserOption {
                    label: label.into(),
                    description: String::new(),
                })
                .into(),
            selection_mode: mode,
        })
    }

    fn accepted(content: Value) -> ElicitResult {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    #[test]
    fn an_mcp_servers_request_is_passed_on_and_its_response_back() {
        let schema = json!({"type": "object", "properties": {"nights": {"type": "integer"}}});
        let Value::Object(requested_schema) = schema.clone() else {
            unreachable!()
        };
        let asked = Question::Elicitation(Elicitation {
            server: "travel".into(),
            message: "How long?".into(),
            request: ElicitationRequest::Form { requested_schema },
            continuation: json!({"protocol": "live", "call": "c1"}),
        });
        assert_eq!(asked.schema(), schema, "the server's own form");
        assert_eq!(asked.message(), "How long?");
        let declined = ElicitResult::new(ElicitationAction::Decline);
        let expected = Answer::Elicitation(ElicitationResponse {
            action: Action::Decline,
            content: None,
        });
        assert_eq!(
            asked.reply(&declined),
            Ok(Reply::Answer(expected)),
            "a decline goes back to the server"
        );
        let Ok(Reply::Answer(Answer::Elicitation(accepted))) = asked.reply(&accepted(json!({"nights": 2})))
        else {
            panic!("an answer")
        };
        assert_eq!(
            accepted.content,
            Some(Map::from_iter([("nights".to_owned(), json!(2))]))
        );
    }

    #[test]
    fn every_form_is_an_elicitation_schema() {
        for question in [
            ask(SelectionMode::FreeText),
            ask(SelectionMode::SingleSelect),
            ask(SelectionMode::MultiSelect),
            Question::Approval {
                tool: "send".into(),
                args: "{}".into(),
            },
        ] {
            let params = serde_json::to_value(question.elicitation()).unwrap();
            assert_eq!(params["requestedSchema"], question.schema(), "{params}");
        }
        let single = ask(SelectionMode::SingleSelect).schema();
        assert_eq!(
            single["properties"]["answer"]["oneOf"][0],
            json!({"const": "Pro", "title": "Pro"})
        );
        let multi = ask(SelectionMode::MultiSelect).schema();
        assert_eq!(multi["properties"]["answer"]["type"], "array");
    }

    #[test]
    fn replies_become_answers() {
        let single = ask(SelectionMode::SingleSelect);
        assert_eq!(
            single.reply(&accepted(json!({"answer": "Pro"}))),
            Ok(Reply::Answer(Answer::Text("Pro".into())))
        );
        assert!(single.reply(&accepted(json!({"answer": 3}))).is_err());
        assert_eq!(
            ask(SelectionMode::MultiSelect).reply(&accepted(json!({"answer": ["Pro", "Basic"]}))),
            Ok(Reply::Answer(Answer::Selections(vec![
                "Pro".into(),
                "Basic".into()
            ])))
        );
        let approval = Question::Approval {
            tool: "send".into(),
            args: "{}".into(),
        };
        assert_eq!(
            approval.reply(&accepted(json!({"approved": false, "reason": "no"}))),
            Ok(Reply::Answer(Answer::Approval {
                approved: false,
                reason: "no".into(),
                edited_args: None
            }))
        );
        assert_eq!(
            single.reply(&ElicitResult::new(ElicitationAction::Decline)),
            Ok(Reply::Declined)
        );
        assert_eq!(
            single.reply(&ElicitResult::new(ElicitationAction::Cancel)),
            Ok(Reply::Cancelled)
        );
    }
}
