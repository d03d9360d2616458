//! Requests -> domain commands. Every malformed field is named.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::domain::{
    Answer, AnswerError, Args, Decider, ElicitationAction, ElicitationResponse, GrantScope, Message,
    Remember, RunId, ThreadId,
};
use crate::pb;
use crate::runtime::{CallAnswer, ResumeRun, RuntimeError, StartRun};

use super::invalid;
use super::tools::tool_definitions;
use super::value::{struct_to_json, value_to_json};

pub(crate) fn parse_run_id(run_id: &str) -> Result<RunId, RuntimeError> {
    if run_id.is_empty() {
        return Err(invalid("run_id", "run_id is required"));
    }
    run_id
        .parse()
        .map_err(|_| invalid("run_id", format!("{run_id:?} is not a valid run id (a UUID)")))
}

fn optional(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

fn message_from_proto(index: usize, message: pb::Message) -> Result<Message, RuntimeError> {
    let pb::Message { role, content } = message;
    if content.is_empty() {
        return Err(invalid(
            "messages",
            format!("messages[{index}].content must not be empty"),
        ));
    }
    match pb::Role::try_from(role) {
        Ok(pb::Role::System) => Ok(Message::System { content }),
        Ok(pb::Role::User) => Ok(Message::User { content }),
        Ok(pb::Role::Assistant) => Ok(Message::Assistant {
            content,
            tool_calls: Vec::new(),
        }),
        Ok(pb::Role::Unspecified | pb::Role::Tool) | Err(_) => Err(invalid(
            "messages",
            format!("messages[{index}].role must be ROLE_SYSTEM, ROLE_USER or ROLE_ASSISTANT"),
        )),
    }
}

pub fn start_request(request: pb::StreamAgentRequest) -> Result<StartRun, RuntimeError> {
    let pb::StreamAgentRequest {
        agent_id,
        prompt,
        messages,
        options,
        metadata,
        request_id,
        tools,
        thread_id,
        auto_resume,
    } = request;
    let thread_id = parse_optional_thread_id(&thread_id)?;
    let messages = match (prompt.is_empty(), messages.is_empty()) {
        (false, false) => return Err(invalid("prompt", "give either prompt or messages, not both")),
        (true, true) => return Err(invalid("prompt", "give a prompt or messages")),
        (false, true) => vec![Message::user(prompt)],
        (true, false) => messages
            .into_iter()
            .enumerate()
            .map(|(index, message)| message_from_proto(index, message))
            .collect::<Result<_, _>>()?,
    };
    let pb::RunOptions {
        max_steps,
        require_tool_approval,
        on_disconnect,
        suspend_ttl_seconds,
    } = options.unwrap_or_default();
    let cancel_on_disconnect = match pb::DisconnectPolicy::try_from(on_disconnect) {
        Ok(pb::DisconnectPolicy::Unspecified | pb::DisconnectPolicy::Continue) => false,
        Ok(pb::DisconnectPolicy::Cancel) => true,
        Err(_) => {
            return Err(invalid(
                "options.on_disconnect",
                format!("unknown policy {on_disconnect}"),
            ))
        }
    };
    Ok(StartRun {
        agent_id,
        messages,
        max_steps,
        require_tool_approval,
        cancel_on_disconnect,
        suspend_ttl: (suspend_ttl_seconds > 0).then(|| Duration::from_secs(suspend_ttl_seconds)),
        metadata: metadata.into_iter().collect(),
        request_id: optional(request_id),
        tools: tool_definitions(tools),
        thread_id,
        auto_resume,
        trace: None,
        run_id: None,
        decider: None,
    })
}

/// A thread id a request names; empty is none.
fn parse_optional_thread_id(thread_id: &str) -> Result<Option<ThreadId>, RuntimeError> {
    if thread_id.is_empty() {
        return Ok(None);
    }
    ThreadId::new(thread_id)
        .map(Some)
        .map_err(|error| invalid("thread_id", error.to_string()))
}

/// The thread id a thread RPC names; required.
pub(crate) fn parse_thread_id(thread_id: &str) -> Result<ThreadId, RuntimeError> {
    parse_optional_thread_id(thread_id)?.ok_or_else(|| invalid("thread_id", "thread_id is required"))
}

/// An elicitation answer: an action, and content only with ACCEPT.
fn elicitation_response(response: pb::ElicitationResponse) -> Result<ElicitationResponse, RuntimeError> {
    let action = match pb::ElicitationAction::try_from(response.action) {
        Ok(pb::ElicitationAction::Accept) => ElicitationAction::Accept,
        Ok(pb::ElicitationAction::Decline) => ElicitationAction::Decline,
        Ok(pb::ElicitationAction::Cancel) => ElicitationAction::Cancel,
        Ok(pb::ElicitationAction::Unspecified) | Err(_) => {
            return Err(invalid(
                "elicitation.action",
                "say what the person did: ELICITATION_ACTION_ACCEPT, _DECLINE or _CANCEL",
            ))
        }
    };
    let content = response.content.map(|content| match struct_to_json(&content) {
        Value::Object(fields) => fields,
        _ => Map::new(),
    });
    Ok(ElicitationResponse { action, content })
}

/// The Resume `request` asks for, answered by `decider`.
pub fn resume_request(request: pb::ResumeRequest, decider: Decider) -> Result<ResumeRun, RuntimeError> {
    let pb::ResumeRequest {
        run_id,
        tool_call_id,
        answer,
        request_id,
        answers,
    } = request;
    let answers = match (answer, answers.is_empty()) {
        (None, true) => return Err(invalid(
            "answer",
            "give an answer: text, selections, data, approval or elicitation (or answers, for several calls)",
        )),
        (Some(_), false) => {
            return Err(invalid(
                "answers",
                "give either one answer (with tool_call_id) or answers, not both",
            ))
        }
        (Some(answer), true) => {
            let (answer, remember) = answer_of(answer)?;
            vec![CallAnswer {
                tool_call_id: optional(tool_call_id),
                answer,
                remember,
            }]
        }
        (None, false) if !tool_call_id.is_empty() => {
            return Err(invalid(
                "tool_call_id",
                "with answers, each answer names its call: leave tool_call_id empty",
            ))
        }
        (None, false) => answers
            .into_iter()
            .enumerate()
            .map(|(position, answer)| tool_answer(position, answer))
            .collect::<Result<_, _>>()?,
    };
    Ok(ResumeRun {
        run_id: parse_run_id(&run_id)?,
        answers,
        request_id: optional(request_id),
        trace: None,
        decider,
    })
}

/// The answer of one call among several.
fn tool_answer(position: usize, answer: pb::ToolAnswer) -> Result<CallAnswer, RuntimeError> {
    let pb::ToolAnswer { tool_call_id, answer } = answer;
    if tool_call_id.is_empty() {
        return Err(RuntimeError::InvalidAnswer(
            AnswerError::new("tool_call_id", "name the call this answer is for").at(position, None),
        ));
    }
    let Some(answer) = answer else {
        return Err(RuntimeError::InvalidAnswer(
            AnswerError::new("answer", "give an answer").at(position, Some(tool_call_id)),
        ));
    };
    let (answer, remember) = answer_of(as_single(answer)).map_err(|error| match error {
        RuntimeError::InvalidRequest { field, reason } => RuntimeError::InvalidAnswer(
            AnswerError::new(field, reason).at(position, Some(tool_call_id.clone())),
        ),
        other => other,
    })?;
    Ok(CallAnswer {
        tool_call_id: Some(tool_call_id),
        answer,
        remember,
    })
}

/// A call's answer among several is the single answer's kinds, carried
/// by another message: read as that one.
fn as_single(answer: pb::tool_answer::Answer) -> pb::resume_request::Answer {
    use pb::resume_request::Answer as One;
    use pb::tool_answer::Answer as Many;
    match answer {
        Many::Text(text) => One::Text(text),
        Many::Selections(selections) => One::Selections(selections),
        Many::Data(data) => One::Data(data),
        Many::Approval(approval) => One::Approval(approval),
        Many::Elicitation(response) => One::Elicitation(response),
    }
}

/// The answer, and with an approval what it asks to remember.
fn answer_of(answer: pb::resume_request::Answer) -> Result<(Answer, Option<Remember>), RuntimeError> {
    use pb::resume_request::Answer as A;
    Ok(match answer {
        A::Text(text) => (Answer::Text(text), None),
        A::Selections(pb::Selections { labels }) => (Answer::Selections(labels), None),
        A::Data(value) => (Answer::Data(value_to_json(&value)), None),
        A::Approval(pb::Approval {
            approved,
            reason,
            edited_args,
            remember,
            remember_for,
        }) => {
            let approval = Answer::Approval {
                approved,
                reason,
                edited_args: edited_args.map(|args| Args::from(struct_to_json(&args))),
            };
            (approval, remember_of(remember, remember_for)?)
        }
        A::Elicitation(response) => (Answer::Elicitation(elicitation_response(response)?), None),
    })
}

/// What `approval.remember` and `approval.remember_for` ask to remember.
fn remember_of(
    scope: i32,
    duration: Option<prost_types::Duration>,
) -> Result<Option<Remember>, RuntimeError> {
    let scope = match pb::GrantScope::try_from(scope) {
        Ok(pb::GrantScope::Unspecified) if duration.is_some() => {
            return Err(invalid(
                "approval.remember_for",
                "remember_for comes with remember: GRANT_SCOPE_RUN or GRANT_SCOPE_THREAD",
            ))
        }
        Ok(pb::GrantScope::Unspecified) => return Ok(None),
        Ok(pb::GrantScope::Run) => GrantScope::Run,
        Ok(pb::GrantScope::Thread) => GrantScope::Thread,
        Err(_) => {
            return Err(invalid(
                "approval.remember",
                format!("{scope} is not a grant scope (GRANT_SCOPE_RUN = 1, GRANT_SCOPE_THREAD = 2)"),
            ))
        }
    };
    let duration = match duration {
        None => None,
        Some(prost_types::Duration { seconds, nanos }) if seconds > 0 && nanos == 0 => {
            Some(Duration::from_secs(seconds.unsigned_abs()))
        }
        Some(_) => {
            return Err(invalid(
                "approval.remember_for",
                "remember_for is a positive number of whole seconds",
            ))
        }
    };
    Ok(Some(Remember { scope, duration }))
}
