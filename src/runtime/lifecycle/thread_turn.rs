//! A turn on a conversation thread: whether a StreamAgent on a thread
//! starts the next run or (auto-resume) answers the question its latest run
//! is suspended on. One run at a time per thread: the store's create of a
//! thread's run is a compare-and-set on the thread's latest run, so of two
//! racing starts exactly one is stored. The history a run of a thread
//! starts from is read by `reads/thread_history.rs`.

use super::auto_answer::answer_from_text;
use super::{CallAnswer, ResumeRun, StartRun};
use crate::domain::{
    Decider, DecisionSource, Message, RunId, RunRecord, RunStatus, SuspendPayload, Tenant, ThreadId, Waiting,
};
use crate::runtime::{Runtime, RuntimeError};
use crate::store::StoreError;

/// What a StreamAgent on a thread does.
pub(super) enum Turn {
    /// Start a run after this one (`None`: the thread's first run).
    Start(Option<RunId>),
    /// Answer the latest run's question (auto-resume); `run` is the latest
    /// run as just read, which the Resume goes on from.
    Answer { resume: ResumeRun, run: Box<RunRecord> },
    /// Replay an answer given before with the same request id: its
    /// continuation starts at `first_seq` of `run_id`.
    Replay { run_id: RunId, first_seq: u64 },
}

impl Runtime {
    /// Decides what `request` does on `tenant`'s thread `thread`.
    pub(super) async fn thread_turn(
        &self,
        tenant: &Tenant,
        thread: &ThreadId,
        request: &StartRun,
    ) -> Result<Turn, RuntimeError> {
        let record = match self.inner.store.threads.load_thread(tenant, thread).await {
            Ok(record) => record,
            Err(StoreError::NotFound) => return Ok(Turn::Start(None)),
            Err(other) => return Err(other.into()),
        };
        let latest = match self.inner.store.runs.load_run(record.latest_run).await {
            Ok(mut run) => {
                self.inner.expire_if_due(&mut run).await?;
                run
            }
            // Gone from under the thread: nothing to wait for.
            Err(StoreError::NotFound) => return Ok(Turn::Start(Some(record.latest_run))),
            Err(other) => return Err(other.into()),
        };
        if let (true, Some(request_id)) = (request.auto_resume, &request.request_id) {
            if let Some(earlier) = latest.state.resumes.iter().find(|r| r.request_id == *request_id) {
                return Ok(Turn::Replay {
                    run_id: latest.id,
                    first_seq: earlier.first_seq,
                });
            }
        }
        match latest.status() {
            RunStatus::Suspended if request.auto_resume => Ok(Turn::Answer {
                resume: auto_resume(&latest, request)?,
                run: Box::new(latest),
            }),
            RunStatus::Running | RunStatus::Suspended => Err(RuntimeError::ThreadBusy {
                run_id: latest.id,
                status: latest.status(),
            }),
            RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled | RunStatus::Expired => {
                Ok(Turn::Start(Some(latest.id)))
            }
        }
    }

    /// The refusal of a start that lost the race for `thread`: names the
    /// run that won.
    pub(super) async fn thread_taken(&self, tenant: &Tenant, thread: &ThreadId) -> RuntimeError {
        match self.inner.store.threads.load_thread(tenant, thread).await {
            Ok(record) => RuntimeError::ThreadBusy {
                run_id: record.latest_run,
                status: record.latest.map_or(RunStatus::Running, |latest| latest.status),
            },
            // Deleted meanwhile: nothing to name; the caller may retry.
            Err(StoreError::NotFound) => RuntimeError::Busy,
            Err(error) => error.into(),
        }
    }
}

/// The Resume that `request` makes of the question `run` is suspended on.
fn auto_resume(run: &RunRecord, request: &StartRun) -> Result<ResumeRun, RuntimeError> {
    let refuse = |waiting: &str| RuntimeError::NotAutoResumable {
        run_id: run.id,
        waiting: waiting.to_owned(),
    };
    let pending = run.pending().first().ok_or_else(|| refuse("nothing"))?;
    let question = match &pending.waiting {
        Waiting::Suspended {
            payload: SuspendPayload::AskUser(question),
        } => question,
        Waiting::Approval => return Err(refuse("an approval")),
        Waiting::Suspended {
            payload: SuspendPayload::Custom { .. },
        } => return Err(refuse(&format!("the custom tool {}", pending.call.name))),
        Waiting::Suspended {
            payload: SuspendPayload::ClientTool { .. },
        } => return Err(refuse(&format!("the client-executed tool {}", pending.call.name))),
        Waiting::Suspended {
            payload: SuspendPayload::Elicitation(elicitation),
        } => {
            return Err(refuse(&format!(
                "a request for input from the MCP server {}",
                elicitation.server
            )))
        }
    };
    let text = request
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        })
        .ok_or(RuntimeError::InvalidRequest {
            field: "messages",
            reason: "auto_resume answers with the last user message, and there is none".into(),
        })?;
    Ok(ResumeRun {
        run_id: run.id,
        answers: vec![CallAnswer {
            tool_call_id: Some(pending.call.id.clone()),
            answer: answer_from_text(question, text)?,
            remember: None,
        }],
        request_id: request.request_id.clone(),
        trace: request.trace.clone(),
        decider: match &request.decider {
            Some(decider) => decider.through(DecisionSource::Thread),
            None => Decider::new("", DecisionSource::Thread),
        },
    })
}
