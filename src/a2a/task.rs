//! Runs as A2A tasks: a task is a run (task id = run id), its context the
//! run's thread. A suspended run is `INPUT_REQUIRED`, its status message
//! the questions, each as readable text and as a typed data part; a
//! completed run's answer is the task's `answer` artifact.

use a2a_pb::proto::{self, part, Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
use serde_json::{json, Value};

use crate::domain::{
    Chunk, Message as Turn, PendingCall, Phase, RunRecord, RunStatus, SuspendPayload, Timestamp, Waiting,
};
use crate::grpc::convert::{json_to_struct, json_to_value, timestamp};

/// The id of the artifact that holds a task's answer text.
pub(super) const ANSWER_ARTIFACT: &str = "answer";

pub(super) fn state_of(status: RunStatus) -> TaskState {
    match status {
        RunStatus::Running => TaskState::Working,
        RunStatus::Suspended => TaskState::InputRequired,
        RunStatus::Completed => TaskState::Completed,
        // A question left unanswered past its time to live ended the task.
        RunStatus::Failed | RunStatus::Expired => TaskState::Failed,
        RunStatus::Cancelled => TaskState::Canceled,
    }
}

/// The run status a task state lists (ListTasks' filter).
pub(super) fn status_of(state: TaskState) -> Option<RunStatus> {
    match state {
        TaskState::Working => Some(RunStatus::Running),
        TaskState::InputRequired => Some(RunStatus::Suspended),
        TaskState::Completed => Some(RunStatus::Completed),
        TaskState::Failed => Some(RunStatus::Failed),
        TaskState::Canceled => Some(RunStatus::Cancelled),
        _ => None,
    }
}

/// The context of a run: its thread (every run A2A starts has one).
pub(super) fn context_of(run: &RunRecord) -> String {
    run.thread
        .as_ref()
        .map(|link| link.id.to_string())
        .unwrap_or_default()
}

fn text_part(text: impl Into<String>) -> Part {
    Part {
        content: Some(part::Content::Text(text.into())),
        ..Default::default()
    }
}

fn data_part(data: &Value) -> Part {
    Part {
        content: Some(part::Content::Data(json_to_value(data))),
        ..Default::default()
    }
}

/// An agent message of `run`, with `parts`.
fn agent_message(run: &RunRecord, id: String, parts: Vec<Part>) -> Message {
    Message {
        message_id: id,
        context_id: context_of(run),
        task_id: run.id.to_string(),
        role: Role::Agent as i32,
        parts,
        ..Default::default()
    }
}

/// The typed question of one pending call (`askUser`, `approval`, or the
/// tool's own payload: see [`PendingCall::question_json`]), with the
/// call's id.
pub(super) fn question_data(pending: &PendingCall) -> Value {
    let mut data = pending.question_json();
    data["toolCallId"] = json!(pending.call.id);
    data
}

/// What a person reads of one pending call.
fn question_text(pending: &PendingCall) -> String {
    match &pending.waiting {
        Waiting::Approval => format!(
            "[Approval needed]: {} with arguments {}",
            pending.call.name,
            serde_json::to_string(&pending.call.args).unwrap_or_default()
        ),
        Waiting::Suspended { payload } => match payload {
            SuspendPayload::AskUser(ask) => ask.fallback_text(),
            SuspendPayload::Custom { .. } => format!("[{} waits for an answer]", pending.call.name),
            SuspendPayload::ClientTool { tool_name, .. } => {
                format!("[Client tool {tool_name} waits for its result]")
            }
            SuspendPayload::Elicitation(elicitation) => elicitation.fallback_text(),
        },
    }
}

/// The status message of a task waiting on `pending`: per call its text,
/// then its typed data.
pub(super) fn input_required_message(run: &RunRecord, pending: &[PendingCall]) -> Message {
    let parts = pending
        .iter()
        .flat_map(|call| [text_part(question_text(call)), data_part(&question_data(call))])
        .collect();
    agent_message(run, format!("{}-input-{}", run.id, run.last_seq()), parts)
}

/// The task's status as `run` is now.
pub(super) fn status(run: &RunRecord) -> TaskStatus {
    let message = match run.phase() {
        Phase::Suspended { pending, .. } => Some(input_required_message(run, pending)),
        Phase::Completed { final_text } if !final_text.is_empty() => Some(agent_message(
            run,
            format!("{}-final", run.id),
            vec![text_part(final_text.clone())],
        )),
        Phase::Failed { failure } => Some(agent_message(
            run,
            format!("{}-failed", run.id),
            vec![text_part(failure.message.clone())],
        )),
        Phase::Cancelled { reason } if !reason.is_empty() => Some(agent_message(
            run,
            format!("{}-cancelled", run.id),
            vec![text_part(reason.clone())],
        )),
        Phase::Expired => Some(agent_message(
            run,
            format!("{}-expired", run.id),
            vec![text_part("the question was not answered in time")],
        )),
        _ => None,
    };
    TaskStatus {
        state: state_of(run.status()) as i32,
        message,
        timestamp: Some(timestamp(run.updated_at)),
    }
}

/// The conversation of `run` as A2A messages, its last `history_length`
/// (all without one).
fn history(run: &RunRecord, history_length: Option<i32>) -> Vec<Message> {
    let mut messages: Vec<Message> = run
        .state
        .messages
        .iter()
        .enumerate()
        .filter_map(|(index, turn)| {
            let (role, text) = match turn {
                Turn::User { content } => (Role::User, content.as_str()),
                Turn::Assistant { content, .. } if !content.is_empty() => (Role::Agent, content.as_str()),
                _ => return None,
            };
            Some(Message {
                message_id: format!("{}-{index}", run.id),
                context_id: context_of(run),
                task_id: run.id.to_string(),
                role: role as i32,
                parts: vec![text_part(text)],
                ..Default::default()
            })
        })
        .collect();
    if let Some(keep) = history_length.and_then(|n| usize::try_from(n).ok()) {
        let drop = messages.len().saturating_sub(keep);
        messages.drain(..drop);
    }
    messages
}

/// The answer artifact of a completed run.
fn answer_artifact(text: &str) -> Artifact {
    Artifact {
        artifact_id: ANSWER_ARTIFACT.into(),
        name: ANSWER_ARTIFACT.into(),
        parts: vec![text_part(text)],
        ..Default::default()
    }
}

/// `run` as a task, with its last `history_length` messages.
pub(super) fn task(run: &RunRecord, history_length: Option<i32>) -> Task {
    let artifacts = match run.phase() {
        Phase::Completed { final_text } => vec![answer_artifact(final_text)],
        _ => Vec::new(),
    };
    Task {
        id: run.id.to_string(),
        context_id: context_of(run),
        status: Some(status(run)),
        artifacts,
        history: history(run, history_length),
        metadata: Some(json_to_struct(&json!({"agentId": run.agent_id}))),
    }
}

/// Turns a run's chunks into A2A stream events, as they come: answer text
/// as appended artifact updates, a suspension as `INPUT_REQUIRED`, the end
/// as its final state.
pub(super) struct Updates {
    run: RunRecord,
    /// The calls suspended on since the last step began.
    pending: Vec<PendingCall>,
    /// Whether the answer artifact has had a first update.
    answering: bool,
}

impl Updates {
    /// For the stream of `run` (as stored when the stream began).
    pub(super) fn new(run: RunRecord) -> Self {
        Self {
            run,
            pending: Vec::new(),
            answering: false,
        }
    }

    fn status_update(
        &self,
        state: TaskState,
        message: Option<Message>,
        at: Timestamp,
    ) -> proto::StreamResponse {
        stream_response(proto::stream_response::Payload::StatusUpdate(
            proto::TaskStatusUpdateEvent {
                task_id: self.run.id.to_string(),
                context_id: context_of(&self.run),
                status: Some(TaskStatus {
                    state: state as i32,
                    message,
                    timestamp: Some(timestamp(at)),
                }),
                metadata: None,
            },
        ))
    }

    fn artifact_update(&mut self, text: &str, last_chunk: bool) -> proto::StreamResponse {
        let append = std::mem::replace(&mut self.answering, true);
        stream_response(proto::stream_response::Payload::ArtifactUpdate(
            proto::TaskArtifactUpdateEvent {
                task_id: self.run.id.to_string(),
                context_id: context_of(&self.run),
                artifact: Some(answer_artifact(text)),
                append,
                last_chunk,
                metadata: None,
            },
        ))
    }

    /// The events that say `chunk` (stored at `at`).
    pub(super) fn of(&mut self, chunk: &Chunk, at: Timestamp) -> Vec<proto::StreamResponse> {
        match chunk {
            Chunk::Start { .. } => vec![self.status_update(TaskState::Working, None, at)],
            Chunk::StepStart { .. } => {
                self.pending.clear();
                Vec::new()
            }
            Chunk::TextDelta { text } => vec![self.artifact_update(text, false)],
            Chunk::ToolCallSuspended { call, payload, .. } => {
                self.pending.push(PendingCall {
                    call: call.clone(),
                    waiting: Waiting::Suspended {
                        payload: payload.clone(),
                    },
                    since: None,
                });
                Vec::new()
            }
            Chunk::ToolCallApproval { call } => {
                self.pending.push(PendingCall {
                    call: call.clone(),
                    waiting: Waiting::Approval,
                    since: None,
                });
                Vec::new()
            }
            Chunk::Finish { reason, text, .. } => {
                use crate::domain::FinishReason;
                match reason {
                    FinishReason::Suspended => {
                        let message = input_required_message(&self.run, &self.pending);
                        vec![self.status_update(TaskState::InputRequired, Some(message), at)]
                    }
                    FinishReason::Stop | FinishReason::MaxSteps => {
                        let last = self.artifact_update("", true);
                        let message = (!text.is_empty()).then(|| {
                            agent_message(
                                &self.run,
                                format!("{}-final", self.run.id),
                                vec![text_part(text.clone())],
                            )
                        });
                        vec![last, self.status_update(TaskState::Completed, message, at)]
                    }
                    FinishReason::Cancelled => vec![self.status_update(TaskState::Canceled, None, at)],
                    FinishReason::Error => vec![self.status_update(TaskState::Failed, None, at)],
                }
            }
            Chunk::Error(failure) => {
                let message = agent_message(
                    &self.run,
                    format!("{}-failed", self.run.id),
                    vec![text_part(failure.message.clone())],
                );
                vec![self.status_update(TaskState::Failed, Some(message), at)]
            }
            Chunk::ToolCall { .. } | Chunk::ToolResult { .. } | Chunk::StepFinish { .. } => Vec::new(),
        }
    }
}

pub(super) fn stream_response(payload: proto::stream_response::Payload) -> proto::StreamResponse {
    proto::StreamResponse {
        payload: Some(payload),
    }
}
