//! Follows one stream of a run to its end, passing the streamed text to
//! the client as progress notifications when it asked for them, and turns
//! a run that ended into the tool's result: its final text, with
//! `structuredContent` `{runId, status, finalText}`, an error when the run
//! failed or was cancelled; and the call's other results: an answer
//! refused, a question a client cannot be asked, notes put first.

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use rmcp::RoleServer;
use serde_json::json;
use tokio_stream::StreamExt;

use super::question::Question;
use crate::domain::{Chunk, PendingCall, RunRecord, RunStatus};
use crate::runtime::RunStream;

/// Where progress notifications go: the client's token, and how many went.
pub(super) struct Progress {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    sent: u32,
}

impl Progress {
    pub(super) fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        Self { peer, token, sent: 0 }
    }

    async fn text(&mut self, text: &str) {
        let Some(token) = &self.token else { return };
        self.sent += 1;
        let mut param = ProgressNotificationParam::new(token.clone(), f64::from(self.sent));
        param.message = Some(text.to_owned());
        // A client that left misses the rest; the run goes on.
        let _ = self.peer.notify_progress(param).await;
    }
}

/// What a stream showed of its run.
#[derive(Default)]
pub(super) struct Seen {
    /// The text of the last `finish`.
    pub final_text: Option<String>,
    /// The message of the run's failure, if it failed.
    pub error: Option<String>,
}

/// Reads `stream` to its end.
pub(super) async fn follow(stream: RunStream, progress: &mut Progress) -> Seen {
    let mut seen = Seen::default();
    let mut chunks = stream.map_events(|event| event.chunk.clone());
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Chunk::TextDelta { text } => progress.text(&text).await,
            Chunk::Finish { text, .. } => seen.final_text = Some(text),
            Chunk::Error(failure) => seen.error = Some(failure.message),
            _ => {}
        }
    }
    seen
}

/// The result of `run`, which ended (or waits for an answer elsewhere):
/// `text` for the person, the run's state for programs.
pub(super) fn result(run: &RunRecord, final_text: &str, text: String) -> CallToolResult {
    let failed = matches!(
        run.status(),
        RunStatus::Failed | RunStatus::Cancelled | RunStatus::Expired
    );
    let structured = json!({
        "runId": run.id.to_string(),
        "status": run.status().as_str(),
        "finalText": final_text,
    });
    let content = vec![ContentBlock::text(text)];
    let mut result = if failed {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = Some(structured);
    result
}

/// The result of a run that ended, as `seen` saw its end.
pub(super) fn ended(run: &RunRecord, seen: &Seen) -> CallToolResult {
    let final_text = seen.final_text.clone().unwrap_or_default();
    let text = match (run.status(), &seen.error) {
        (RunStatus::Failed, Some(error)) => format!("The run failed: {error}"),
        (RunStatus::Failed, None) => "The run failed.".to_owned(),
        (RunStatus::Cancelled, _) => "The run was cancelled.".to_owned(),
        (RunStatus::Expired, _) => "The run expired before its question was answered.".to_owned(),
        _ => final_text.clone(),
    };
    result(run, &final_text, text)
}

/// `response` with `notes` first.
pub(super) fn noted(response: CallToolResponse, notes: Vec<String>) -> CallToolResponse {
    match response {
        CallToolResponse::Complete(mut result) if !notes.is_empty() => {
            let mut content: Vec<ContentBlock> = notes.into_iter().map(ContentBlock::text).collect();
            content.append(&mut result.content);
            result.content = content;
            result.into()
        }
        response => response,
    }
}

/// The result of an answer Resume refused: the reason, and that `run`
/// still waits.
pub(super) fn not_accepted(run: &RunRecord, error: &dyn std::fmt::Display) -> CallToolResponse {
    let text = format!(
        "The answer was not accepted ({error}). Run {} still waits for an answer: answer it with \
         agentd's Resume (gRPC, the inbox or A2A); calling this tool again starts a new run.",
        run.id
    );
    let mut result = result(run, "", text);
    result.is_error = Some(true);
    result.into()
}

/// The result for a client that cannot be asked `pending`'s question of
/// `run`: the question as text, the run and how to answer it.
pub(super) fn waiting(
    run: &RunRecord,
    pending: &PendingCall,
    question: Option<&Question>,
) -> rmcp::model::CallToolResult {
    let asks = match question {
        Some(Question::Ask(question)) => question.fallback_text(),
        Some(approval @ Question::Approval { .. }) => format!("[Approval needed]: {}", approval.message()),
        Some(Question::Elicitation(asked)) => asked.fallback_text(),
        None => format!(
            "[Waiting]: the call {} of {} waits for its result",
            pending.call.id, pending.call.name
        ),
    };
    let text = format!(
        "{asks}\n\nRun {} waits for this answer (tool call {}). Answer it with agentd's Resume \
         (gRPC, the inbox or A2A), then follow the run with SubscribeRun or GetRun.",
        run.id, pending.call.id
    );
    result(run, "", text)
}
