//! A run's messages as a thread shows them (GetRun, GetThread), each
//! tool result with the answer that produced it.

use std::collections::HashMap;

use crate::domain::{Answer, AnswerRecord, AnswerVia, Args, Message, RunRecord};
use crate::pb;

use super::chunk::call_to_proto;
use super::value::timestamp;

/// A run's messages (without system instructions), each result with the
/// answer that produced it, if any.
pub(super) fn run_messages(run: &RunRecord) -> Vec<pb::ThreadMessage> {
    let run_id = run.id.to_string();
    // The last answer of each call counts (there is one per call).
    let answers: HashMap<&str, &AnswerRecord> = run
        .state
        .answers
        .iter()
        .map(|answer| (answer.tool_call_id.as_str(), answer))
        .collect();
    // The model's arguments of the calls a person edited.
    let edited: HashMap<&str, &Args> = run
        .state
        .edited_calls
        .iter()
        .map(|edited| (edited.call.id.as_str(), &edited.original_args))
        .collect();
    let message = |role: pb::Role, content: &str| pb::ThreadMessage {
        role: role as i32,
        content: content.to_owned(),
        tool_calls: Vec::new(),
        tool_result: None,
        run_id: run_id.clone(),
        answer: None,
    };
    run.state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System { .. } => None,
            Message::User { content } => Some(message(pb::Role::User, content)),
            Message::Assistant { content, tool_calls } => Some(pb::ThreadMessage {
                tool_calls: tool_calls
                    .iter()
                    .map(|call| call_to_proto(call, edited.get(call.id.as_str()).copied()))
                    .collect(),
                ..message(pb::Role::Assistant, content)
            }),
            Message::Tool {
                tool_call_id,
                tool_name,
                content,
                is_error,
            } => Some(pb::ThreadMessage {
                tool_result: Some(pb::ToolResult {
                    tool_call_id: tool_call_id.clone(),
                    tool_name: tool_name.clone(),
                    content: content.clone(),
                    is_error: *is_error,
                }),
                answer: answers.get(tool_call_id.as_str()).map(|a| answer_to_proto(a)),
                ..message(pb::Role::Tool, content)
            }),
        })
        .collect()
}

fn answer_to_proto(answer: &AnswerRecord) -> pb::ThreadAnswer {
    let text = match &answer.answer {
        Answer::Text(text) => text.clone(),
        Answer::Selections(labels) => labels.join(", "),
        Answer::Data(data) => data.to_string(),
        Answer::Elicitation(response) => match &response.content {
            Some(content) => format!(
                "{}: {}",
                response.action.as_str(),
                serde_json::Value::Object(content.clone())
            ),
            None => response.action.as_str().to_owned(),
        },
        Answer::Approval {
            approved: true,
            edited_args: None,
            ..
        } => "approved".to_owned(),
        Answer::Approval {
            approved: true,
            edited_args: Some(args),
            ..
        } => format!("approved with edited arguments: {}", args.json().get()),
        Answer::Approval {
            approved: false,
            reason,
            ..
        } if reason.is_empty() => "declined".to_owned(),
        Answer::Approval {
            approved: false,
            reason,
            ..
        } => format!("declined: {reason}"),
        Answer::Declined => "declined to answer".to_owned(),
    };
    let source = match answer.via {
        AnswerVia::Resume => pb::AnswerSource::Resume,
        AnswerVia::AutoResume => pb::AnswerSource::AutoResume,
        AnswerVia::Deadline => pb::AnswerSource::Deadline,
    };
    pb::ThreadAnswer {
        tool_call_id: answer.tool_call_id.clone(),
        text,
        answered_by: answer.answered_by.to_string(),
        source: source as i32,
        answered_at: Some(timestamp(answer.answered_at)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Timestamp;

    #[test]
    fn an_answer_reads_as_given() {
        let record = |answer: Answer| AnswerRecord {
            tool_call_id: "call_1_1".into(),
            answer,
            answered_at: Timestamp(1_700_000_000_000_000),
            answered_by: crate::domain::Tenant::default(),
            via: AnswerVia::Resume,
            proceeds_from: None,
        };
        let approval = |approved: bool, reason: &str, edited: Option<serde_json::Value>| Answer::Approval {
            approved,
            reason: reason.into(),
            edited_args: edited.map(Args::from),
        };
        let text = |answer| answer_to_proto(&record(answer)).text;
        assert_eq!(text(approval(true, "", None)), "approved");
        assert_eq!(
            text(approval(true, "", Some(serde_json::json!({"draft": "Hi"})))),
            r#"approved with edited arguments: {"draft":"Hi"}"#
        );
        assert_eq!(text(approval(false, "", None)), "declined");
        assert_eq!(text(approval(false, "later", None)), "declined: later");
        assert_eq!(text(Answer::Selections(vec!["a".into(), "b".into()])), "a, b");
    }
}
