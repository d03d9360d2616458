//! What a suspended run asks of the person at the terminal, read from the
//! chunks (or the run's pending calls), and how a typed answer becomes a
//! Resume answer. Pure data: no I/O here.

use serde_json::Value;

use crate::grpc::convert::{json_to_value, struct_to_json};
use crate::pb;
use crate::pb::resume_request::Answer;

/// One option of a question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub description: String,
}

/// What a pending call needs.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// ask_user, free text.
    Text { question: String },
    /// ask_user with options: one (`multi == false`) or several labels.
    Choose {
        question: String,
        options: Vec<Choice>,
        multi: bool,
    },
    /// A call that waits for approval before its tool runs; `always`
    /// approves it and remembers the approval in `always`'s scope (the
    /// chat's thread, or the run).
    Approve { args: Value, always: pb::GrantScope },
    /// A custom suspending tool or a client-executed tool: JSON data.
    Data { payload: Value },
    /// An MCP server's request for input: a form (`schema`) or a page to
    /// open (`url`).
    Elicit {
        server: String,
        message: String,
        schema: Value,
        url: Option<String>,
    },
}

/// A call waiting for an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub tool_call_id: String,
    pub tool_name: String,
    pub ask: Ask,
}

/// An answer that cannot even be sent.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerParseError {
    #[error("the answer is empty")]
    Empty,
    #[error("answer yes, always or no (optionally `no: reason`)")]
    NotYesNo,
    #[error("the answer is not JSON: {0}")]
    NotJson(String),
    #[error("answer with the form's values as a JSON object, or decline, or cancel")]
    NotForm,
}

impl Ask {
    fn from_payload(payload: Option<&pb::SuspendPayload>, args: Value) -> Self {
        use pb::suspend_payload::Kind;
        match payload.and_then(|payload| payload.kind.as_ref()) {
            Some(Kind::AskUser(ask)) => {
                let mode = pb::SelectionMode::try_from(ask.selection_mode).unwrap_or_default();
                let options: Vec<Choice> = ask
                    .options
                    .iter()
                    .map(|option| Choice {
                        label: option.label.clone(),
                        description: option.description.clone(),
                    })
                    .collect();
                match mode {
                    pb::SelectionMode::Unspecified if options.is_empty() => Ask::Text {
                        question: ask.question.clone(),
                    },
                    _ => Ask::Choose {
                        question: ask.question.clone(),
                        options,
                        multi: mode == pb::SelectionMode::MultiSelect,
                    },
                }
            }
            Some(Kind::Custom(custom)) => Ask::Data {
                payload: struct_to_json(custom),
            },
            Some(Kind::ClientTool(call)) => Ask::Data {
                payload: serde_json::json!({
                    "tool_name": call.tool_name,
                    "args": call.args.as_ref().map_or(Value::Null, struct_to_json),
                }),
            },
            Some(Kind::Elicitation(asked)) => {
                let url = pb::ElicitationMode::try_from(asked.mode) == Ok(pb::ElicitationMode::Url);
                Ask::Elicit {
                    server: asked.server.clone(),
                    message: asked.message.clone(),
                    schema: asked
                        .requested_schema
                        .as_ref()
                        .map_or(Value::Null, struct_to_json),
                    url: url.then(|| asked.url.clone()),
                }
            }
            None => Ask::Data { payload: args },
        }
    }

    /// The question's text, for messages.
    pub fn headline(&self, tool_name: &str) -> String {
        match self {
            Ask::Text { question } | Ask::Choose { question, .. } => question.clone(),
            Ask::Approve { .. } => format!("Allow the call of {tool_name}?"),
            Ask::Data { .. } => format!("{tool_name} waits for data"),
            Ask::Elicit { server, message, .. } => format!("{server} asks: {message}"),
        }
    }
}

fn args_json(args: Option<&prost_types::Struct>) -> Value {
    args.map_or(Value::Object(Default::default()), struct_to_json)
}

impl Pending {
    /// The call a chunk says is waiting, if it says so.
    pub fn from_chunk(chunk: &pb::agent_chunk::Chunk) -> Option<Self> {
        use pb::agent_chunk::Chunk;
        match chunk {
            Chunk::ToolCallSuspended(suspended) => Some(Self {
                tool_call_id: suspended.tool_call_id.clone(),
                tool_name: suspended.tool_name.clone(),
                ask: Ask::from_payload(
                    suspended.suspend_payload.as_ref(),
                    args_json(suspended.args.as_ref()),
                ),
            }),
            Chunk::ToolCallApproval(approval) => Some(Self {
                tool_call_id: approval.tool_call_id.clone(),
                tool_name: approval.tool_name.clone(),
                ask: Ask::Approve {
                    args: args_json(approval.args.as_ref()),
                    always: pb::GrantScope::Run,
                },
            }),
            _ => None,
        }
    }

    /// This call as a chat asks it: on a thread, `always` remembers an
    /// approval in the thread.
    pub fn on_thread(mut self, on_thread: bool) -> Self {
        if let (Ask::Approve { always, .. }, true) = (&mut self.ask, on_thread) {
            *always = pb::GrantScope::Thread;
        }
        self
    }

    /// A pending call as GetRun lists it.
    pub fn from_run(pending: &pb::PendingToolCall) -> Self {
        let args = args_json(pending.args.as_ref());
        Self {
            tool_call_id: pending.tool_call_id.clone(),
            tool_name: pending.tool_name.clone(),
            ask: if pending.awaiting_approval {
                Ask::Approve {
                    args,
                    always: pb::GrantScope::Run,
                }
            } else {
                Ask::from_payload(pending.suspend_payload.as_ref(), args)
            },
        }
    }

    /// Reads a typed answer: a label (or any text) for a question, labels
    /// separated by commas for a multi-select question, `yes`/`no` (with
    /// an optional `: reason`) for an approval, JSON for data; for an MCP
    /// server's request, `decline` or `cancel`, else the form's values as a
    /// JSON object (`yes` accepts a page to open).
    pub fn parse_answer(&self, typed: &str) -> Result<Answer, AnswerParseError> {
        let typed = typed.trim();
        match &self.ask {
            Ask::Text { .. } | Ask::Choose { multi: false, .. } if typed.is_empty() => {
                Err(AnswerParseError::Empty)
            }
            Ask::Text { .. } => Ok(Answer::Text(typed.to_owned())),
            Ask::Choose {
                options,
                multi: false,
                ..
            } => Ok(Answer::Text(by_number(options, typed))),
            Ask::Choose {
                options, multi: true, ..
            } => {
                let labels: Vec<String> = typed
                    .split(',')
                    .map(str::trim)
                    .filter(|label| !label.is_empty())
                    .map(|label| by_number(options, label))
                    .collect();
                if labels.is_empty() {
                    return Err(AnswerParseError::Empty);
                }
                Ok(Answer::Selections(pb::Selections { labels }))
            }
            Ask::Approve { always, .. } => parse_approval(typed, *always),
            Ask::Data { .. } => serde_json::from_str::<Value>(typed)
                .map(|data| Answer::Data(json_to_value(&data)))
                .map_err(|error| AnswerParseError::NotJson(error.to_string())),
            Ask::Elicit { url, .. } => parse_elicitation(typed, url.is_some()),
        }
    }
}

/// The label of the option numbered `typed` (from 1, as listed), or
/// `typed` itself when it is not an option's number (or is a label).
fn by_number(options: &[Choice], typed: &str) -> String {
    if options.iter().any(|option| option.label == typed) {
        return typed.to_owned();
    }
    let numbered = typed
        .parse::<usize>()
        .ok()
        .and_then(|number| number.checked_sub(1))
        .and_then(|index| options.get(index));
    match numbered {
        Some(option) => option.label.clone(),
        None => typed.to_owned(),
    }
}

/// The response a person typed to an MCP server's request for input.
fn parse_elicitation(typed: &str, url: bool) -> Result<Answer, AnswerParseError> {
    let respond = |action: pb::ElicitationAction, content: Option<prost_types::Struct>| {
        Answer::Elicitation(pb::ElicitationResponse {
            action: action as i32,
            content,
        })
    };
    match typed.to_ascii_lowercase().as_str() {
        "decline" | "no" | "n" => return Ok(respond(pb::ElicitationAction::Decline, None)),
        "cancel" => return Ok(respond(pb::ElicitationAction::Cancel, None)),
        "yes" | "y" | "accept" | "ok" if url => return Ok(respond(pb::ElicitationAction::Accept, None)),
        _ => {}
    }
    match serde_json::from_str::<Value>(typed) {
        Ok(content @ Value::Object(_)) if !url => Ok(respond(
            pb::ElicitationAction::Accept,
            Some(crate::grpc::convert::json_to_struct(&content)),
        )),
        _ => Err(AnswerParseError::NotForm),
    }
}

/// `yes`, `y`, `approve`; `always`, `a` (yes, and the tool's later calls
/// in `always`'s scope too); `no`, `n`, `deny`, each optionally followed by
/// `: reason` (or a space and the reason).
fn parse_approval(typed: &str, always: pb::GrantScope) -> Result<Answer, AnswerParseError> {
    let (word, reason) = match typed.split_once([':', ' ']) {
        Some((word, reason)) => (word, reason.trim()),
        None => (typed, ""),
    };
    let (approved, remember) = match word.to_ascii_lowercase().as_str() {
        "y" | "yes" | "approve" | "approved" | "allow" => (true, pb::GrantScope::Unspecified),
        "a" | "always" => (true, always),
        "n" | "no" | "deny" | "denied" | "decline" | "reject" => (false, pb::GrantScope::Unspecified),
        _ => return Err(AnswerParseError::NotYesNo),
    };
    Ok(Answer::Approval(pb::Approval {
        approved,
        reason: reason.to_owned(),
        remember: remember.into(),
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choose(multi: bool) -> Pending {
        Pending {
            tool_call_id: "call_1".into(),
            tool_name: "ask_user".into(),
            ask: Ask::Choose {
                question: "Which?".into(),
                options: vec![],
                multi,
            },
        }
    }

    #[test]
    fn numbers_pick_the_options_they_show() {
        let options = ["Basic", "Pro", "Enterprise"]
            .map(|label| Choice {
                label: label.into(),
                description: String::new(),
            })
            .to_vec();
        let pending = |multi| Pending {
            ask: Ask::Choose {
                question: "Which?".into(),
                options: options.clone(),
                multi,
            },
            ..choose(false)
        };
        assert_eq!(pending(false).parse_answer("2"), Ok(Answer::Text("Pro".into())));
        // Not an option's number: sent as typed, for the server to refuse.
        assert_eq!(pending(false).parse_answer("7"), Ok(Answer::Text("7".into())));
        let labels = vec!["Basic".to_owned(), "Enterprise".to_owned()];
        assert_eq!(
            pending(true).parse_answer("1, Enterprise"),
            Ok(Answer::Selections(pb::Selections { labels }))
        );
    }

    #[test]
    fn typed_answers_become_resume_answers() {
        assert_eq!(
            choose(false).parse_answer(" Pro "),
            Ok(Answer::Text("Pro".into()))
        );
        let labels = vec!["Mushrooms".to_owned(), "Basil".to_owned()];
        assert_eq!(
            choose(true).parse_answer("Mushrooms, Basil,"),
            Ok(Answer::Selections(pb::Selections { labels }))
        );
        assert_eq!(choose(true).parse_answer(" , "), Err(AnswerParseError::Empty));

        let approval = Pending {
            ask: Ask::Approve {
                args: Value::Null,
                always: pb::GrantScope::Run,
            },
            ..choose(false)
        };
        let declined = pb::Approval {
            approved: false,
            reason: "too costly".into(),
            edited_args: None,
            ..Default::default()
        };
        assert_eq!(
            approval.parse_answer("no: too costly"),
            Ok(Answer::Approval(declined))
        );
        assert!(matches!(
            approval.parse_answer("Yes"),
            Ok(Answer::Approval(pb::Approval { approved: true, .. }))
        ));
        assert_eq!(approval.parse_answer("maybe"), Err(AnswerParseError::NotYesNo));
        let remembered = |pending: &Pending| match pending.parse_answer("always") {
            Ok(Answer::Approval(pb::Approval {
                approved: true,
                remember,
                ..
            })) => pb::GrantScope::try_from(remember).ok(),
            _ => None,
        };
        assert_eq!(remembered(&approval), Some(pb::GrantScope::Run));
        assert_eq!(
            remembered(&approval.clone().on_thread(true)),
            Some(pb::GrantScope::Thread)
        );

        let data = Pending {
            ask: Ask::Data { payload: Value::Null },
            ..choose(false)
        };
        assert!(matches!(
            data.parse_answer("{\"decision\": \"approve\"}"),
            Ok(Answer::Data(_))
        ));
        assert!(matches!(
            data.parse_answer("{"),
            Err(AnswerParseError::NotJson(_))
        ));
    }
}
