//! A2A messages into agentd's commands: a message without a task id starts
//! a run (its text parts are the prompt, its `message_id` the idempotency
//! key, its context the thread); a message with one answers the task's
//! question, validated by Resume exactly as an agentd.v1 answer is.

use a2a_pb::proto::{part, Message, Part};
use serde_json::Value;

use crate::domain::{
    unknown_key, Answer, Decider, ElicitationResponse, Message as Turn, Remember, RunId, ThreadId,
    APPROVAL_KEYS, ELICITATION_RESPONSE_KEYS,
};
use crate::grpc::convert::{invalid, value_to_json};
use crate::runtime::{CallAnswer, ResumeRun, RuntimeError, StartRun};

/// The text of `parts`, joined by blank lines.
fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|part| match &part.content {
            Some(part::Content::Text(text)) => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The first data part of `parts`, as JSON.
fn data_of(parts: &[Part]) -> Option<Value> {
    parts.iter().find_map(|part| match &part.content {
        Some(part::Content::Data(value)) => Some(value_to_json(value)),
        _ => None,
    })
}

/// The run a new task starts: `agent_id`'s, on the message's context (a
/// fresh one without), keyed by its message id.
pub(super) fn start_run(agent_id: &str, message: &Message) -> Result<StartRun, RuntimeError> {
    let prompt = text_of(&message.parts);
    if prompt.trim().is_empty() {
        return Err(invalid(
            "message.parts",
            "a message that starts a task needs a text part",
        ));
    }
    let context = match message.context_id.as_str() {
        "" => uuid::Uuid::now_v7().to_string(),
        context => context.to_owned(),
    };
    let thread_id =
        ThreadId::new(&context).map_err(|error| invalid("message.context_id", error.to_string()))?;
    Ok(StartRun {
        agent_id: agent_id.to_owned(),
        messages: vec![Turn::user(prompt)],
        max_steps: 0,
        require_tool_approval: false,
        cancel_on_disconnect: false,
        suspend_ttl: None,
        metadata: Default::default(),
        request_id: (!message.message_id.is_empty()).then(|| message.message_id.clone()),
        tools: Vec::new(),
        thread_id: Some(thread_id),
        auto_resume: false,
        trace: None,
        run_id: None,
        decider: None,
    })
}

/// The Resume a message with a task id makes: a data part with
/// `selections`, `approval`, `elicitation` or `data`, or text (free text, or a
/// single-select question's option label); the call is named by
/// `toolCallId` (in the data part or the message's metadata) when several
/// wait.
pub(super) fn resume_run(
    run_id: RunId,
    message: &Message,
    decider: Decider,
) -> Result<ResumeRun, RuntimeError> {
    let data = data_of(&message.parts);
    let in_metadata = message
        .metadata
        .as_ref()
        .map(crate::grpc::convert::struct_to_json)
        .and_then(|metadata| {
            metadata
                .get("toolCallId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    let named = data
        .as_ref()
        .and_then(|data| data.get("toolCallId"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or(in_metadata);
    let (answer, remember) = match data {
        Some(data) => answer_from_data(&data)?,
        // Free text, or a single-select question's option label.
        None => (Answer::Text(text_of(&message.parts)), None),
    };
    Ok(ResumeRun {
        run_id,
        answers: vec![CallAnswer {
            tool_call_id: named,
            answer,
            remember,
        }],
        request_id: (!message.message_id.is_empty()).then(|| message.message_id.clone()),
        trace: None,
        decider,
    })
}

/// The answer a data part gives, and with an approval what it asks to
/// remember.
fn answer_from_data(data: &Value) -> Result<(Answer, Option<Remember>), RuntimeError> {
    let field = "message.parts.data";
    if let Some(selections) = data.get("selections") {
        let labels = selections
            .as_array()
            .and_then(|labels| {
                labels
                    .iter()
                    .map(|label| label.as_str().map(str::to_owned))
                    .collect()
            })
            .ok_or_else(|| invalid(field, "selections must be a list of option labels"))?;
        return Ok((Answer::Selections(labels), None));
    }
    if let Some(approval) = data.get("approval") {
        // No other key is read: a misspelled one (`edited_args`) would
        // otherwise make a plain approval of the model's arguments.
        if let Some((key, why)) = approval.as_object().and_then(|o| unknown_key(o, &APPROVAL_KEYS)) {
            return Err(invalid(field, format!("approval.{key} {why}")));
        }
        let approved = approval
            .get("approved")
            .and_then(Value::as_bool)
            .ok_or_else(|| invalid(field, "approval.approved must be true or false"))?;
        let reason = match approval.get("reason") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(reason)) => reason.clone(),
            Some(_) => return Err(invalid(field, "approval.reason must be a string")),
        };
        // A person's edit of the call's arguments, run instead of the
        // model's (checked against the tool's input schema by Resume).
        let edited_args = approval
            .get("editedArgs")
            .filter(|args| !args.is_null())
            .cloned()
            .map(crate::domain::Args::new);
        let remember = approval
            .as_object()
            .map(Remember::from_json)
            .transpose()
            .map_err(|(key, why)| invalid(field, format!("approval.{key} {why}")))?
            .flatten();
        let answer = Answer::Approval {
            approved,
            reason,
            edited_args,
        };
        return Ok((answer, remember));
    }
    if let Some(value) = data.get("data") {
        return Ok((Answer::Data(value.clone()), None));
    }
    if let Some(response) = data.get("elicitation") {
        if let Some((key, why)) = response
            .as_object()
            .and_then(|o| unknown_key(o, &ELICITATION_RESPONSE_KEYS))
        {
            return Err(invalid(field, format!("elicitation.{key} {why}")));
        }
        return ElicitationResponse::from_json(response)
            .map(|response| (Answer::Elicitation(response), None))
            .map_err(|(key, why)| invalid(field, format!("elicitation.{key} {why}")));
    }
    if let Some(text) = data.get("text").and_then(Value::as_str) {
        return Ok((Answer::Text(text.to_owned()), None));
    }
    Err(invalid(
        field,
        "a data part answers with {\"selections\": [...]}, {\"approval\": {\"approved\", \"reason\", \"editedArgs\", \"remember\", \"rememberFor\"}}, \
         {\"elicitation\": {\"action\", \"content\"}} or {\"data\": ...} (and \"toolCallId\" when several calls wait)",
    ))
}
