//! A pending call as an AG-UI interrupt, and a resume entry's payload back
//! as the run's answer. The interrupt carries the answer's JSON Schema
//! (`responseSchema`) and the typed question under `metadata`; what an
//! answer is worth is not decided here: Resume validates it exactly as it
//! validates an agentd.v1 answer.

use serde_json::{json, Value};

use super::error::ApiError;
use crate::agent::Agent;
use crate::domain::{
    unknown_key, Answer, Args, AskUserPayload, ElicitationRequest, ElicitationResponse, PendingCall,
    Remember, SelectionMode, SuspendPayload, Timestamp, Waiting, APPROVAL_KEYS, ELICITATION_RESPONSE_KEYS,
};

/// Why a call waits, as an interrupt's `reason`.
pub(super) fn reason(pending: &PendingCall) -> &'static str {
    match &pending.waiting {
        Waiting::Approval => "tool_approval",
        Waiting::Suspended { payload } => match payload {
            SuspendPayload::AskUser(_) => "ask_user",
            SuspendPayload::Custom { .. } => "custom",
            SuspendPayload::ClientTool { .. } => "client_tool",
            SuspendPayload::Elicitation(_) => "elicitation",
        },
    }
}

/// Whether `pending` waits on a tool the client runs (a frontend tool).
pub(super) fn is_client_tool(pending: &PendingCall) -> bool {
    matches!(
        pending.waiting,
        Waiting::Suspended {
            payload: SuspendPayload::ClientTool { .. }
        }
    )
}

fn message(pending: &PendingCall) -> String {
    match &pending.waiting {
        Waiting::Approval => format!("Approve this call of {}?", pending.call.name),
        Waiting::Suspended { payload } => match payload {
            SuspendPayload::AskUser(ask) => ask.question.clone(),
            SuspendPayload::Custom { data } => ["message", "question", "instructions"]
                .iter()
                .find_map(|key| data.get(*key).and_then(Value::as_str))
                .map_or_else(
                    || format!("{} waits for an answer", pending.call.name),
                    str::to_owned,
                ),
            SuspendPayload::ClientTool { tool_name, .. } => format!("Run {tool_name} and give its result"),
            SuspendPayload::Elicitation(asked) => asked.message.clone(),
        },
    }
}

fn options(ask: &AskUserPayload) -> Vec<Value> {
    ask.options
        .iter()
        .map(|option| {
            let mut choice = json!({"const": option.label, "title": option.label});
            if !option.description.is_empty() {
                choice["description"] = json!(option.description);
            }
            choice
        })
        .collect()
}

/// The JSON Schema of the answer `pending` takes.
pub(super) fn response_schema(pending: &PendingCall, agent: Option<&Agent>) -> Value {
    let spec = |name: &str| agent.and_then(|agent| agent.tool_specs().find(|spec| spec.name == name));
    match &pending.waiting {
        Waiting::Approval => {
            let edited = spec(&pending.call.name)
                .map_or_else(|| json!({"type": "object"}), |spec| spec.input_schema.clone());
            json!({
                "type": "object",
                "properties": {
                    "approved": {"type": "boolean", "title": "Approve the call"},
                    "reason": {"type": "string", "title": "Reason"},
                    "editedArgs": edited,
                    "remember": {
                        "type": "string",
                        "title": "Approve later calls of the tool too",
                        "oneOf": [
                            {"const": "run", "title": "In this run"},
                            {"const": "thread", "title": "In this conversation"},
                        ],
                    },
                    "rememberFor": {"type": "string", "title": "For how long (e.g. 8h; unset: as long as the run or conversation)"},
                },
                "required": ["approved"],
                "additionalProperties": false,
            })
        }
        Waiting::Suspended { payload } => match payload {
            SuspendPayload::AskUser(ask) => match ask.selection_mode {
                SelectionMode::FreeText => json!({"type": "string", "minLength": 1}),
                SelectionMode::SingleSelect => json!({"type": "string", "oneOf": options(ask)}),
                SelectionMode::MultiSelect => json!({
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": true,
                    "items": {"type": "string", "anyOf": options(ask)},
                }),
            },
            SuspendPayload::Custom { .. } => spec(&pending.call.name)
                .and_then(|spec| spec.resume_schema.clone())
                .unwrap_or_else(|| json!({})),
            SuspendPayload::ClientTool { .. } => json!({}),
            SuspendPayload::Elicitation(asked) => {
                let mut properties =
                    json!({"action": {"type": "string", "enum": ["accept", "decline", "cancel"]}});
                if let ElicitationRequest::Form { requested_schema } = &asked.request {
                    properties["content"] = Value::Object(requested_schema.clone());
                }
                json!({
                    "type": "object",
                    "properties": properties,
                    "required": ["action"],
                    "additionalProperties": false,
                })
            }
        },
    }
}

/// ISO 8601, to the millisecond, in UTC.
pub(super) fn iso8601(at: Timestamp) -> String {
    let micros = u64::try_from(at.0).unwrap_or_default();
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_micros(micros);
    humantime::format_rfc3339_millis(time).to_string()
}

/// `pending` as an interrupt, waiting until `expires_at`.
pub(super) fn interrupt(
    pending: &PendingCall,
    agent: Option<&Agent>,
    expires_at: Option<Timestamp>,
) -> Value {
    let mut interrupt = json!({
        "id": pending.call.id,
        "reason": reason(pending),
        "message": message(pending),
        "toolCallId": pending.call.id,
        "responseSchema": response_schema(pending, agent),
        "metadata": pending.question_json(),
    });
    if let Some(at) = expires_at {
        interrupt["expiresAt"] = json!(iso8601(at));
    }
    interrupt
}

/// The answer a resolved entry's `payload` gives `pending`, and with an
/// approval what it asks to remember; the entry is `resume[entry]`. The
/// payload's shape is checked here; whether it fits the question, by
/// Resume.
pub(super) fn answer(
    pending: &PendingCall,
    entry: usize,
    payload: Option<&Value>,
) -> Result<(Answer, Option<Remember>), ApiError> {
    let id = pending.call.id.as_str();
    let field = format!("resume[{entry}].payload");
    let wrong = |field: String, reason: &str| {
        ApiError::invalid_answer(id, field.clone(), format!("{field} {reason}"))
    };
    let Some(payload) = payload else {
        return Err(wrong(field, "is required to resolve this interrupt"));
    };
    let answer = match &pending.waiting {
        Waiting::Approval => {
            let Some(object) = payload.as_object() else {
                return Err(wrong(
                    field,
                    "must be an object {approved, reason?, editedArgs?, remember?, rememberFor?}",
                ));
            };
            // The schema allows no other property: a misspelled one
            // (`edited_args`) would otherwise be a plain approval.
            if let Some((key, why)) = unknown_key(object, &APPROVAL_KEYS) {
                return Err(wrong(format!("{field}.{key}"), &why));
            }
            let remember =
                Remember::from_json(object).map_err(|(key, why)| wrong(format!("{field}.{key}"), why))?;
            let Some(approved) = object.get("approved").and_then(Value::as_bool) else {
                return Err(wrong(format!("{field}.approved"), "must be a boolean"));
            };
            let reason = match object.get("reason") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(reason)) => reason.clone(),
                Some(_) => return Err(wrong(format!("{field}.reason"), "must be a string")),
            };
            let edited_args = match object.get("editedArgs") {
                None | Some(Value::Null) => None,
                Some(args @ Value::Object(_)) => Some(Args::from(args.clone())),
                Some(_) => return Err(wrong(format!("{field}.editedArgs"), "must be an object")),
            };
            let approval = Answer::Approval {
                approved,
                reason,
                edited_args,
            };
            return Ok((approval, remember));
        }
        Waiting::Suspended { payload: asked } => match asked {
            SuspendPayload::AskUser(ask) => match (ask.selection_mode, payload) {
                (SelectionMode::MultiSelect, Value::Array(labels)) => {
                    let labels: Option<Vec<String>> = labels
                        .iter()
                        .map(|label| label.as_str().map(str::to_owned))
                        .collect();
                    Answer::Selections(
                        labels.ok_or_else(|| wrong(field.clone(), "must be an array of option labels"))?,
                    )
                }
                (SelectionMode::MultiSelect, _) => {
                    return Err(wrong(field, "must be an array of option labels"))
                }
                (_, Value::String(text)) => Answer::Text(text.clone()),
                (_, _) => return Err(wrong(field, "must be a string")),
            },
            SuspendPayload::Custom { .. } | SuspendPayload::ClientTool { .. } => {
                Answer::Data(payload.clone())
            }
            SuspendPayload::Elicitation(_) => {
                if let Some((key, why)) = payload
                    .as_object()
                    .and_then(|object| unknown_key(object, &ELICITATION_RESPONSE_KEYS))
                {
                    return Err(wrong(format!("{field}.{key}"), &why));
                }
                match ElicitationResponse::from_json(payload) {
                    Ok(response) => Answer::Elicitation(response),
                    Err(("", why)) => return Err(wrong(field, why)),
                    Err((key, why)) => return Err(wrong(format!("{field}.{key}"), why)),
                }
            }
        },
    };
    Ok((answer, None))
}

/// What `cancelled` means for `pending`: an approval is declined; any
/// other question has no answer, and the run is cancelled (`None`).
pub(super) fn cancelled(pending: &PendingCall) -> Option<Answer> {
    matches!(pending.waiting, Waiting::Approval).then(|| Answer::Approval {
        approved: false,
        reason: "cancelled".to_owned(),
        edited_args: None,
    })
}

/// A frontend tool's result, from the client's `tool` message.
pub(super) fn tool_result(content: &str, is_error: bool) -> Answer {
    if is_error {
        return Answer::Data(json!({"is_error": true, "content": content}));
    }
    Answer::Data(serde_json::from_str::<Value>(content).unwrap_or_else(|_| Value::String(content.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AskUserOption, ElicitationAction, ToolCall};

    fn ask(mode: SelectionMode) -> PendingCall {
        PendingCall {
            call: ToolCall {
                id: "call_1_1".into(),
                name: "ask_user".into(),
                args: Args::from(json!({})),
            },
            waiting: Waiting::Suspended {
                payload: SuspendPayload::AskUser(AskUserPayload {
                    question: "Which plan?".into(),
                    options: vec![
                        AskUserOption {
                            label: "Basic".into(),
                            description: String::new(),
                        },
                        AskUserOption {
                            label: "Pro".into(),
                            description: "More".into(),
                        },
                    ],
                    selection_mode: mode,
                }),
            },
            since: None,
        }
    }

    #[test]
    fn questions_become_interrupts_with_schemas() {
        let single = interrupt(&ask(SelectionMode::SingleSelect), None, Some(Timestamp(0)));
        assert_eq!(single["id"], "call_1_1");
        assert_eq!(single["reason"], "ask_user");
        assert_eq!(single["expiresAt"], "1970-01-01T00:00:00.000Z");
        assert_eq!(single["responseSchema"]["oneOf"][1]["const"], "Pro");
        assert_eq!(single["metadata"]["askUser"]["selectionMode"], "single_select");
        let multi = interrupt(&ask(SelectionMode::MultiSelect), None, None);
        assert_eq!(multi["responseSchema"]["uniqueItems"], true);
        assert!(multi.get("expiresAt").is_none());
    }

    #[test]
    fn an_mcp_servers_form_is_an_elicitation_interrupt() {
        let form =
            json!({"type": "object", "properties": {"email": {"type": "string"}}, "required": ["email"]});
        let pending = PendingCall {
            call: ToolCall {
                id: "call_1_1".into(),
                name: "mcp:travel/book".into(),
                args: Args::from(json!({})),
            },
            waiting: Waiting::Suspended {
                payload: SuspendPayload::Elicitation(crate::domain::Elicitation {
                    server: "travel".into(),
                    message: "Book it?".into(),
                    request: ElicitationRequest::Form {
                        requested_schema: form.as_object().unwrap().clone(),
                    },
                    continuation: json!(null),
                }),
            },
            since: None,
        };
        let asked = interrupt(&pending, None, None);
        assert_eq!(asked["reason"], "elicitation");
        assert_eq!(asked["message"], "Book it?");
        assert_eq!(asked["responseSchema"]["properties"]["content"], form);
        assert_eq!(asked["metadata"]["elicitation"]["mode"], "form");
        let accepted = answer(
            &pending,
            0,
            Some(&json!({"action": "accept", "content": {"email": "a@b.c"}})),
        );
        assert!(matches!(
            accepted.unwrap(),
            (
                Answer::Elicitation(ElicitationResponse {
                    action: ElicitationAction::Accept,
                    content: Some(_)
                }),
                None
            )
        ));
        let error = answer(&pending, 0, Some(&json!({"action": "maybe"}))).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("resume[0].payload.action"));
    }

    #[test]
    fn an_approval_with_a_field_its_schema_does_not_allow_is_refused() {
        let pending = PendingCall {
            call: ToolCall {
                id: "call_1_1".into(),
                name: "send_email".into(),
                args: Args::from(json!({"to": "a@example.com"})),
            },
            waiting: Waiting::Approval,
            since: None,
        };
        assert_eq!(response_schema(&pending, None)["additionalProperties"], false);
        let misspelled = json!({"approved": true, "edited_args": {"to": "b@example.com"}});
        let error = answer(&pending, 0, Some(&misspelled)).unwrap_err();
        assert_eq!(error.code, "invalid_answer");
        assert_eq!(error.field.as_deref(), Some("resume[0].payload.edited_args"));
        assert!(
            error.message.contains("did you mean editedArgs?"),
            "{}",
            error.message
        );
        let spelled = json!({"approved": true, "editedArgs": {"to": "b@example.com"}});
        assert!(answer(&pending, 0, Some(&spelled)).is_ok());
    }

    #[test]
    fn payload_shapes_are_checked_before_resume() {
        let multi = ask(SelectionMode::MultiSelect);
        assert_eq!(
            answer(&multi, 0, Some(&json!(["Pro"]))).unwrap(),
            (Answer::Selections(vec!["Pro".into()]), None)
        );
        let error = answer(&multi, 2, Some(&json!("Pro"))).unwrap_err();
        assert_eq!(error.field.as_deref(), Some("resume[2].payload"));
        assert_eq!(error.interrupt_id.as_deref(), Some("call_1_1"));
        assert!(answer(&multi, 0, None).is_err());
    }
}
