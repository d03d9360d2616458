//! Threads -> their proto messages (GetThread, ListThreads), and the
//! ListThreads page token: `t1.` followed by the creation time (in
//! microseconds) and the id of the page's last thread, separated by a dot
//! (thread ids may contain dots, so the time comes first).

use crate::domain::{ThreadCursor, ThreadId, ThreadRecord, Timestamp};
use crate::pb;
use crate::runtime::{ListThreads, RuntimeError, ThreadPage, ThreadView};

use super::message::run_messages;
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

pub(crate) fn list_threads_request(request: pb::ListThreadsRequest) -> Result<ListThreads, RuntimeError> {
    let pb::ListThreadsRequest {
        page_size,
        page_token,
    } = request;
    Ok(ListThreads {
        page_size,
        after: parse_page_token(&page_token)?,
    })
}

pub(crate) fn thread_page_to_proto(page: &ThreadPage) -> pb::ListThreadsResponse {
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

pub(crate) fn thread_to_proto(view: &ThreadView) -> pb::Thread {
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

#[cfg(test)]
mod tests {
    use super::*;

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
