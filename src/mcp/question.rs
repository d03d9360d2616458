//! A pending call as an MCP elicitation, and the client's answer back as
//! the run's answer. Single-select is a string enum with titled options,
//! multi-select an array of them, free text a string, an approval
//! `{approved, reason?, remember?}` (remember: `run`, or `thread` on a
//! thread, as a gRPC approval's `remember` is); an MCP server's own request for input (a tool of
//! an MCP server that asked) is passed on as the server made it, and the
//! client's response goes back to that server as given. What the answer is
//! worth is not decided here: Resume validates it exactly as it validates
//! an agentd.v1 answer.

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{json, Map, Value};

use crate::domain::{
    unknown_key, Answer, AnswerError, AskUserPayload, Elicitation, ElicitationAction as Action,
    ElicitationRequest, ElicitationResponse, PendingCall, Remember, RunRecord, SelectionMode, SuspendPayload,
    Waiting,
};

/// The property of the form that carries a question's answer.
const ANSWER: &str = "answer";

/// The keys of an approval's form content.
const MCP_APPROVAL_KEYS: [&str; 4] = ["approved", "reason", "remember", "rememberFor"];

/// What a pending call asks, in the shapes an MCP form can take.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Question {
    Ask(AskUserPayload),
    Approval {
        tool: String,
        args: String,
        /// Whether the run is on a thread: whether the approval may be
        /// remembered in the thread as well as in the run.
        on_thread: bool,
    },
    /// An MCP server's request, passed on.
    Elicitation(Elicitation),
}

/// What the client did with the form.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Reply {
    /// Accepted, with an answer for Resume to check and, with an
    /// approval, what it asks to remember.
    Answer(Answer, Option<Remember>),
    Declined,
    Cancelled,
}

impl Question {
    /// The question `pending` of `run` asks; `None` for a suspension no
    /// form can answer (a custom tool's resume data, a client tool's
    /// result).
    pub(super) fn of(run: &RunRecord, pending: &PendingCall) -> Option<Self> {
        match &pending.waiting {
            Waiting::Approval => Some(Self::Approval {
                tool: pending.call.name.clone(),
                args: pending.call.args.json().get().to_owned(),
                on_thread: run.thread.is_some(),
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
    pub(super) fn message(&self) -> String {
        match self {
            Self::Ask(question) => question.question.clone(),
            Self::Approval { tool, args, .. } => format!("Approve this call of {tool}? Arguments: {args}"),
            Self::Elicitation(asked) => asked.message.clone(),
        }
    }

    /// The form's JSON schema.
    pub(super) fn schema(&self) -> Value {
        let options = |question: &AskUserPayload| -> Vec<Value> {
            question
                .options
                .iter()
                .map(|option| json!({"const": option.label, "title": option.label}))
                .collect()
        };
        match self {
            Self::Ask(question) => {
                let mut answer = match question.selection_mode {
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
                // An option is `{const, title}` in the elicitation schema;
                // what the options mean is the field's description.
                if let Some(described) = described_options(question) {
                    answer["description"] = Value::String(described);
                }
                json!({"type": "object", "properties": {ANSWER: answer}, "required": [ANSWER]})
            }
            Self::Approval { tool, on_thread, .. } => {
                let mut scopes =
                    vec![json!({"const": "run", "title": format!("Every call of {tool} in this run")})];
                if *on_thread {
                    scopes.push(json!({"const": "thread", "title": format!("Every call of {tool} in this conversation")}));
                }
                json!({
                    "type": "object",
                    "properties": {
                        "approved": {"type": "boolean", "title": "Approve the call"},
                        "reason": {"type": "string", "title": "Reason (when declining)"},
                        "remember": {
                            "type": "string",
                            "title": "Also approve, without asking (when approving)",
                            "oneOf": scopes,
                        },
                    },
                    "required": ["approved"],
                })
            }
            Self::Elicitation(asked) => match &asked.request {
                ElicitationRequest::Form { requested_schema } => Value::Object(requested_schema.clone()),
                ElicitationRequest::Url { .. } => json!({"type": "object", "properties": {}}),
            },
        }
    }

    /// The `elicitation/create` parameters that ask this question; after
    /// a `refusal` of the answer given, asked again with the reason first.
    pub(super) fn elicitation(&self, refusal: Option<&str>) -> ElicitRequestParams {
        let message = match refusal {
            None => self.message(),
            Some(why) => format!(
                "The answer was not accepted ({why}). Please answer again.\n\n{}",
                self.message()
            ),
        };
        let params = match self {
            Self::Elicitation(Elicitation {
                server,
                request: ElicitationRequest::Url { url },
                ..
            }) => json!({
                "mode": "url",
                "message": message,
                "url": url,
                "elicitationId": format!("{server}:{}", uuid::Uuid::now_v7()),
            }),
            _ => json!({
                "mode": "form",
                "message": message,
                "requestedSchema": self.schema(),
            }),
        };
        // The schema is one of the shapes above, which the type accepts.
        serde_json::from_value(params).expect("a form elicitation")
    }

    /// What `result` (an `ElicitResult`) says, or why it cannot say it.
    pub(super) fn reply(&self, result: &ElicitResult) -> Result<Reply, AnswerError> {
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
                // The form's fields, and `rememberFor` as the other JSON
                // surfaces take it; a misspelled one is refused, not dropped.
                if let Some((key, why)) = unknown_key(content, &MCP_APPROVAL_KEYS) {
                    return Err(AnswerError::new("content", format!("content.{key} {why}")));
                }
                let Some(Value::Bool(approved)) = content.get("approved") else {
                    return Err(AnswerError::new("content.approved", "a boolean is required"));
                };
                let reason = match content.get("reason") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(reason)) => reason.clone(),
                    Some(_) => return Err(AnswerError::new("content.reason", "a string")),
                };
                let remember = Remember::from_json(content).map_err(|(key, why)| {
                    let field = if key == "remember" {
                        "content.remember"
                    } else {
                        "content.rememberFor"
                    };
                    AnswerError::new(field, why)
                })?;
                let approval = Answer::Approval {
                    approved: *approved,
                    reason,
                    edited_args: None,
                };
                return Ok(Reply::Answer(approval, remember));
            }
        };
        Ok(Reply::Answer(answer, None))
    }
}

/// The options of `question` that have a description, one a line
/// (`label: description`); `None` when no option has one.
fn described_options(question: &AskUserPayload) -> Option<String> {
    let lines: Vec<String> = question
        .options
        .iter()
        .filter(|option| !option.description.trim().is_empty())
        .map(|option| format!("{}: {}", option.label, option.description.trim()))
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
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
    Ok(Reply::Answer(
        Answer::Elicitation(ElicitationResponse { action, content }),
        None,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AskUserOption, GrantScope};

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
            Ok(Reply::Answer(expected, None)),
            "a decline goes back to the server"
        );
        let Ok(Reply::Answer(Answer::Elicitation(accepted), None)) =
            asked.reply(&accepted(json!({"nights": 2})))
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
                on_thread: true,
            },
        ] {
            let params = serde_json::to_value(question.elicitation(None)).unwrap();
            assert_eq!(params["requestedSchema"], question.schema(), "{params}");
            assert_eq!(params["message"], question.message());
            let again = serde_json::to_value(question.elicitation(Some("no such option"))).unwrap();
            let message = again["message"].as_str().unwrap();
            assert!(
                message.starts_with("The answer was not accepted (no such option). Please answer again."),
                "{message}"
            );
            assert!(message.ends_with(&question.message()), "{message}");
        }
        let single = ask(SelectionMode::SingleSelect).schema();
        assert_eq!(
            single["properties"]["answer"]["oneOf"][0],
            json!({"const": "Pro", "title": "Pro"})
        );
        let multi = ask(SelectionMode::MultiSelect).schema();
        assert_eq!(multi["properties"]["answer"]["type"], "array");
        assert_eq!(
            single["properties"]["answer"].get("description"),
            None,
            "no option has a description"
        );
        let mut described = AskUserPayload {
            question: "Which?".into(),
            options: vec![
                AskUserOption {
                    label: "Pro".into(),
                    description: "For teams".into(),
                },
                AskUserOption {
                    label: "Basic".into(),
                    description: String::new(),
                },
            ],
            selection_mode: SelectionMode::SingleSelect,
        };
        let schema = Question::Ask(described.clone()).schema();
        assert_eq!(schema["properties"]["answer"]["description"], "Pro: For teams");
        described.selection_mode = SelectionMode::MultiSelect;
        let schema = Question::Ask(described).schema();
        assert_eq!(schema["properties"]["answer"]["description"], "Pro: For teams");
        // Remembering in the thread is offered only on a thread.
        let scopes = |on_thread| {
            let approval = Question::Approval {
                tool: "send".into(),
                args: "{}".into(),
                on_thread,
            };
            let schema = approval.schema();
            let consts = schema["properties"]["remember"]["oneOf"]
                .as_array()
                .unwrap()
                .iter();
            consts.map(|scope| scope["const"].clone()).collect::<Vec<_>>()
        };
        assert_eq!(scopes(true), [json!("run"), json!("thread")]);
        assert_eq!(scopes(false), [json!("run")]);
    }

    #[test]
    fn replies_become_answers() {
        let single = ask(SelectionMode::SingleSelect);
        assert_eq!(
            single.reply(&accepted(json!({"answer": "Pro"}))),
            Ok(Reply::Answer(Answer::Text("Pro".into()), None))
        );
        assert!(single.reply(&accepted(json!({"answer": 3}))).is_err());
        assert_eq!(
            ask(SelectionMode::MultiSelect).reply(&accepted(json!({"answer": ["Pro", "Basic"]}))),
            Ok(Reply::Answer(
                Answer::Selections(vec!["Pro".into(), "Basic".into()]),
                None
            ))
        );
        let approval = Question::Approval {
            tool: "send".into(),
            args: "{}".into(),
            on_thread: true,
        };
        assert_eq!(
            approval.reply(&accepted(json!({"approved": false, "reason": "no"}))),
            Ok(Reply::Answer(
                Answer::Approval {
                    approved: false,
                    reason: "no".into(),
                    edited_args: None
                },
                None
            ))
        );
        let Ok(Reply::Answer(Answer::Approval { approved: true, .. }, remember)) =
            approval.reply(&accepted(json!({"approved": true, "remember": "thread"})))
        else {
            panic!("an approval")
        };
        assert_eq!(remember.map(|remember| remember.scope), Some(GrantScope::Thread));
        let misspelled = approval.reply(&accepted(json!({"approved": true, "remeber": "run"})));
        let error = misspelled.expect_err("an unknown field");
        assert!(error.reason.contains("content.remeber"), "{}", error.reason);
        assert!(
            error
                .reason
                .contains("the fields are approved, reason, remember, rememberFor"),
            "{}",
            error.reason
        );
        let refused = approval.reply(&accepted(json!({"approved": true, "remember": "always"})));
        assert_eq!(refused.map_err(|error| error.field), Err("content.remember"));
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
