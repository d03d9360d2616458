//! Threads -> their proto messages (GetThread, ListThreads), and the
//! ListThreads page token: `t1.` followed by the creation time (in
//! microseconds) and the id of the page's last thread, separated by a dot
//! (thread ids may contain dots, so the time comes first).

use std::collections::HashMap;

use crate::domain::{
    Answer, AnswerRecord, AnswerVia, Args, Message, RunRecord, ThreadCursor, ThreadId, ThreadRecord,
    Timestamp,
};
use crate::pb;
use crate::runtime::{ListThreads, RuntimeError, ThreadPage, ThreadView};

use super::chunk::call_to_proto;
use super::run::status_to_proto;
use super::value::timestamp;

/// The version prefix of every thread page token this server issues.
const TOKEN_PREFIX: &str = "t1.";

fn page_token(cursor: &ThreadCursor) -> String {
    format!("{TOKEN_PREFIX}{}.{}", cursor.created_at.0, cursor.id)
}

fn parse_page_token(token: &str) -> Result<Option<ThreadCursor>, RuntimeError> {
    super::parse_page_token(token, TOKEN_PREFIX, "ListThreads", |rest| {
        let (micros, id) = rest.split_once('.')?;
        // Digits only: `parse` alone would take a sign.
        if !micros.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(ThreadCursor {
            created_at: Timestamp(micros.parse().ok()?),
            id: ThreadId::new(id).ok()?,
        })
    })
}

pub fn list_threads_request(request: pb::ListThreadsRequest) -> Result<ListThreads, RuntimeError> {
    let pb::ListThreadsRequest {
        page_size,
        page_token,
    } = request;
    Ok(ListThreads {
        page_size,
        after: parse_page_token(&page_token)?,
    })
}

pub fn thread_page_to_proto(page: &ThreadPage) -> pb::ListThreadsResponse {
    pb::ListThreadsResponse {
        threads: page.threads.iter().map(summary_to_proto).collect(),
        next_page_token: page.next.as_ref().map(page_token).unwrap_or_default(),
    }
}

/// A thread without its messages and runs.
fn summary_to_proto(thread: &ThreadRecord) -> pb::Thread {
    pb::Thread {
        thread_id: thread.id.to_string(),
        created_at: Some(timestamp(thread.created_at)),
        updated_at: Some(timestamp(thread.last_activity())),
        messages: Vec::new(),
        run_ids: Vec::new(),
        latest_run_id: thread.latest_run.to_string(),
        latest_run_status: thread.latest.map_or(pb::RunStatus::Unspecified, |latest| {
            status_to_proto(latest.status)
        }) as i32,
        grants: Vec::new(),
    }
}

pub fn thread_to_proto(view: &ThreadView) -> pb::Thread {
    let mut thread = summary_to_proto(&view.thread);
    // The latest run as read now (a due suspension reads as expired).
    if let Some(latest) = view.runs.last().filter(|run| run.id == view.thread.latest_run) {
        thread.latest_run_status = status_to_proto(latest.status()) as i32;
        thread.updated_at = Some(timestamp(latest.updated_at.max(view.thread.updated_at)));
    }
    thread.run_ids = view.runs.iter().map(|run| run.id.to_string()).collect();
    thread.messages = view.runs.iter().flat_map(run_messages).collect();
    thread.grants = super::grant::grants_to_proto(&view.grants);
    thread
}

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

    #[test]
    fn page_tokens_round_trip() {
        let cursor = ThreadCursor {
            created_at: Timestamp(1_700_000_000_123_456),
            id: ThreadId::new("support.chat:42").unwrap(),
        };
        assert_eq!(parse_page_token(&page_token(&cursor)).ok(), Some(Some(cursor)));
        assert_eq!(parse_page_token("").ok(), Some(None));
    }

    #[test]
    fn malformed_page_tokens_are_refused() {
        for token in [
            "t1.",
            "t1.12",
            "t1.x.abc",
            "t1.-5.abc",
            "t1.+5.abc",
            "t2.1.abc",
            "r1.1.abc",
            "t1.1.a b",
        ] {
            super::super::assert_refused_page_token(token, parse_page_token(token));
        }
    }
}
