//! Conversation threads end to end: history across runs, one run at a time
//! per thread, auto-resume, GetThread / ListThreads / DeleteThread, tenant
//! isolation, history windowing and retention.

mod auto_resume;
mod conversation;
mod delete;
mod one_at_a_time;
mod provider;
mod retention;
mod tenants;
mod windowing;

use agentd::pb;
use tonic::Status;

use crate::helpers::{collect, TestServer};

/// A StreamAgent request with `prompt` on `thread`.
pub(crate) fn on_thread(thread: &str, prompt: &str) -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        prompt: prompt.into(),
        thread_id: thread.into(),
        ..Default::default()
    }
}

/// Like [`on_thread`], asking for auto-resume.
pub(crate) fn auto_resume(thread: &str, prompt: &str) -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        auto_resume: true,
        ..on_thread(thread, prompt)
    }
}

pub(crate) async fn get_thread(server: &TestServer, thread: &str) -> Result<pb::Thread, Status> {
    server
        .client()
        .get_thread(pb::GetThreadRequest {
            thread_id: thread.into(),
        })
        .await
        .map(tonic::Response::into_inner)
}

/// Streams `request` to its end.
pub(crate) async fn stream(
    server: &TestServer,
    request: pb::StreamAgentRequest,
) -> Result<Vec<pb::AgentChunk>, Status> {
    let response = server.client().stream_agent(request).await?;
    collect(response.into_inner()).await
}

/// The roles and contents of a thread's messages, e.g. `user: plan please`,
/// `assistant -> ask_user`, `tool: User answered: Pro`.
pub(crate) fn transcript(thread: &pb::Thread) -> Vec<String> {
    thread
        .messages
        .iter()
        .map(|m| match pb::Role::try_from(m.role).expect("role") {
            pb::Role::User => format!("user: {}", m.content),
            pb::Role::Assistant if m.tool_calls.is_empty() => format!("assistant: {}", m.content),
            pb::Role::Assistant => {
                let names: Vec<&str> = m.tool_calls.iter().map(|c| c.tool_name.as_str()).collect();
                format!("assistant -> {}", names.join(", "))
            }
            pb::Role::Tool => format!("tool: {}", m.content),
            other => panic!("unexpected role {other:?}"),
        })
        .collect()
}
