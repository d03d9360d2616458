//! A pending call's typed question as JSON, the one shape the JSON
//! surfaces show it in (A2A's data parts, AG-UI's interrupt metadata):
//! under the key of its kind (`askUser`, `approval`, `custom`,
//! `clientTool`, `elicitation`), camelCase. And an elicitation response
//! read back from that shape.

use serde_json::{json, Map, Value};

use super::{
    ElicitationAction, ElicitationRequest, ElicitationResponse, PendingCall, SuspendPayload, Waiting,
};

impl PendingCall {
    /// The typed question of this call, under the key of its kind.
    pub fn question_json(&self) -> Value {
        match &self.waiting {
            Waiting::Approval => json!({
                "approval": {"toolName": self.call.name, "args": self.call.args},
            }),
            Waiting::Suspended { payload } => match payload {
                SuspendPayload::AskUser(ask) => json!({
                    "askUser": {
                        "question": ask.question,
                        "options": ask.options.iter().map(|option| json!({
                            "label": option.label,
                            "description": option.description,
                        })).collect::<Vec<_>>(),
                        "selectionMode": ask.selection_mode.as_str(),
                    },
                }),
                SuspendPayload::Custom { data } => json!({
                    "custom": {"toolName": self.call.name, "payload": data},
                }),
                SuspendPayload::ClientTool { tool_name, args } => json!({
                    "clientTool": {"toolName": tool_name, "args": args},
                }),
                SuspendPayload::Elicitation(asked) => {
                    let mut elicitation = json!({"server": asked.server, "message": asked.message});
                    match &asked.request {
                        ElicitationRequest::Form { requested_schema } => {
                            elicitation["mode"] = json!("form");
                            elicitation["requestedSchema"] = Value::Object(requested_schema.clone());
                        }
                        ElicitationRequest::Url { url } => {
                            elicitation["mode"] = json!("url");
                            elicitation["url"] = json!(url);
                        }
                    }
                    json!({ "elicitation": elicitation })
                }
            },
        }
    }
}

/// The keys of an approval written in JSON (A2A's data parts, AG-UI's
/// payloads): no other is allowed, so that a misspelled one
/// (`edited_args`) is refused rather than quietly dropped.
pub const APPROVAL_KEYS: [&str; 5] = ["approved", "reason", "editedArgs", "remember", "rememberFor"];

/// The keys of an elicitation response written in JSON.
pub const ELICITATION_RESPONSE_KEYS: [&str; 2] = ["action", "content"];

/// The first key of `object` that is not one of `known`, and why it is
/// refused: it names the known keys, and the one it misspells if it is
/// one written another way (`edited_args` for `editedArgs`).
pub fn unknown_key<'a>(object: &'a Map<String, Value>, known: &[&str]) -> Option<(&'a str, String)> {
    let folded = |key: &str| key.replace(['_', '-'], "").to_ascii_lowercase();
    let key = object.keys().find(|key| !known.contains(&key.as_str()))?;
    let hint = known
        .iter()
        .find(|known| folded(known) == folded(key))
        .map(|known| format!(" (did you mean {known}?)"))
        .unwrap_or_default();
    Some((
        key,
        format!("is not allowed{hint}: the fields are {}", known.join(", ")),
    ))
}

impl ElicitationResponse {
    /// `{"action": "accept"|"decline"|"cancel", "content"?: {...}}`, or
    /// what is wrong with it: the key at fault (`action`, `content`, or
    /// empty for the whole) and why.
    pub fn from_json(value: &Value) -> Result<Self, (&'static str, &'static str)> {
        let Some(object) = value.as_object() else {
            return Err(("", "must be an object {action, content?}"));
        };
        let action = match object.get("action").and_then(Value::as_str) {
            Some("accept") => ElicitationAction::Accept,
            Some("decline") => ElicitationAction::Decline,
            Some("cancel") => ElicitationAction::Cancel,
            _ => return Err(("action", "must be \"accept\", \"decline\" or \"cancel\"")),
        };
        let content = match object.get("content") {
            None | Some(Value::Null) => None,
            Some(Value::Object(content)) => Some(content.clone()),
            Some(_) => return Err(("content", "must be an object")),
        };
        Ok(Self { action, content })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_named_with_the_one_they_misspell() {
        let approval = json!({"approved": true, "edited_args": {"to": "x"}});
        let (key, why) = unknown_key(approval.as_object().unwrap(), &APPROVAL_KEYS).expect("refused");
        assert_eq!(key, "edited_args");
        assert!(why.contains("did you mean editedArgs?"), "{why}");
        assert!(
            why.contains("approved, reason, editedArgs, remember, rememberFor"),
            "{why}"
        );
        let response = json!({"action": "accept", "extra": 1});
        let (key, why) =
            unknown_key(response.as_object().unwrap(), &ELICITATION_RESPONSE_KEYS).expect("refused");
        assert_eq!(key, "extra");
        assert!(!why.contains("did you mean"), "{why}");
        assert_eq!(
            unknown_key(
                json!({"approved": false, "reason": "no"}).as_object().unwrap(),
                &APPROVAL_KEYS
            ),
            None
        );
    }

    #[test]
    fn an_elicitation_response_reads_back_from_json() {
        let accepted = ElicitationResponse::from_json(&json!({"action": "accept", "content": {"n": 1}}));
        assert_eq!(accepted.map(|r| r.action), Ok(ElicitationAction::Accept));
        assert_eq!(
            ElicitationResponse::from_json(&json!({"action": "maybe"})).map(|_| ()),
            Err(("action", "must be \"accept\", \"decline\" or \"cancel\""))
        );
        assert_eq!(
            ElicitationResponse::from_json(&json!({"action": "decline", "content": 3})).map(|_| ()),
            Err(("content", "must be an object"))
        );
        assert_eq!(
            ElicitationResponse::from_json(&json!("accept"))
                .map(|_| ())
                .unwrap_err()
                .0,
            ""
        );
    }
}
