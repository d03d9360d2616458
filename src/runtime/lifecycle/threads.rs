//! Runs on a conversation thread: whether a StreamAgent on a thread starts
//! the next run or (auto-resume) answers the question its latest run is
//! suspended on, and the history a run of a thread starts from. One run at
//! a time per thread: the store's create of a thread's run is a
//! compare-and-set on the thread's latest run, so of two racing starts
//! exactly one is stored.

use std::collections::HashMap;

use super::auto_answer::answer_from_text;
use super::ResumeRun;
use crate::domain::{Message, RunId, RunRecord, RunStatus, SuspendPayload, Tenant, ThreadId, Waiting};
use crate::runtime::{Inner, Runtime, RuntimeError, StartRun};
use crate::store::StoreError;

/// What a StreamAgent on a thread does.
pub(in crate::runtime) enum Turn {
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
    pub(in crate::runtime) async fn thread_turn(
        &self,
        tenant: &Tenant,
        thread: &ThreadId,
        request: &StartRun,
    ) -> Result<Turn, RuntimeError> {
        let record = match self.inner.store.load_thread(tenant, thread).await {
            Ok(record) => record,
            Err(StoreError::NotFound) => return Ok(Turn::Start(None)),
            Err(other) => return Err(other.into()),
        };
        let latest = match self.inner.store.load_run(record.latest_run).await {
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
    pub(in crate::runtime) async fn thread_taken(&self, tenant: &Tenant, thread: &ThreadId) -> RuntimeError {
        match self.inner.store.load_thread(tenant, thread).await {
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
        tool_call_id: Some(pending.call.id.clone()),
        answer: answer_from_text(question, text)?,
        request_id: request.request_id.clone(),
    })
}

/// `runs` of one thread in thread order, oldest first, ending with `last`
/// (following each run's link to the one before it).
pub(in crate::runtime) fn in_thread_order(runs: Vec<RunRecord>, last: RunId) -> Vec<RunRecord> {
    let mut by_id: HashMap<RunId, RunRecord> = runs.into_iter().map(|run| (run.id, run)).collect();
    let mut ordered = Vec::with_capacity(by_id.len());
    let mut next = Some(last);
    while let Some(run) = next.and_then(|id| by_id.remove(&id)) {
        next = run.thread.as_ref().and_then(|link| link.previous);
        ordered.push(run);
    }
    ordered.reverse();
    ordered
}

/// What a finished run adds to its thread's history: its messages without
/// system instructions, and without tool calls that never got a result (a
/// run cancelled or expired while a call waited), which no model accepts.
fn history_of(run: &RunRecord) -> impl Iterator<Item = Message> + '_ {
    let answered = |id: &str| {
        run.state
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == id))
    };
    run.state
        .messages
        .iter()
        .filter_map(move |message| match message {
            Message::System { .. } => None,
            Message::Assistant { content, tool_calls } => {
                let tool_calls: Vec<_> = tool_calls.iter().filter(|c| answered(&c.id)).cloned().collect();
                (!content.is_empty() || !tool_calls.is_empty()).then(|| Message::Assistant {
                    content: content.clone(),
                    tool_calls,
                })
            }
            other => Some(other.clone()),
        })
}

impl Inner {
    /// The history `run` continues: every message of the runs before it in
    /// its thread (none without a thread). Read once per execution.
    pub(in crate::runtime) async fn thread_history(
        &self,
        run: &RunRecord,
    ) -> Result<Vec<Message>, StoreError> {
        let Some(link) = &run.thread else {
            return Ok(Vec::new());
        };
        let Some(previous) = link.previous else {
            return Ok(Vec::new());
        };
        let runs = self.store.thread_runs(&run.tenant, &link.id).await?;
        Ok(in_thread_order(runs, previous)
            .iter()
            .flat_map(history_of)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::{RunState, Tenant, Timestamp, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: "ask_user".to_owned(),
            args: json!({"question": "?"}).into(),
        }
    }

    fn run_with(messages: Vec<Message>, previous: Option<RunId>) -> RunRecord {
        let state = RunState {
            messages,
            ..RunState::default()
        };
        let lease = crate::domain::Lease::vacant();
        let (mut run, _) = RunRecord::start(
            RunId::new(),
            Tenant::default(),
            "a".into(),
            Default::default(),
            state,
            lease,
            Timestamp(0),
        );
        run.expire(Timestamp(0));
        run.thread = Some(crate::domain::ThreadLink {
            id: ThreadId::new("t").unwrap(),
            previous,
        });
        run
    }

    #[test]
    fn history_leaves_out_instructions_and_calls_without_results() {
        let run = run_with(
            vec![
                Message::System { content: "s".into() },
                Message::user("q"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![call("answered"), call("never")],
                },
                Message::tool("answered", "ask_user", "User answered: x", false),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![call("pending")],
                },
            ],
            None,
        );
        let history: Vec<Message> = history_of(&run).collect();
        assert_eq!(
            history,
            vec![
                Message::user("q"),
                Message::Assistant {
                    content: String::new(),
                    tool_calls: vec![call("answered")],
                },
                Message::tool("answered", "ask_user", "User answered: x", false),
            ]
        );
    }

    #[test]
    fn runs_are_ordered_by_their_links() {
        let first = run_with(vec![], None);
        let second = run_with(vec![], Some(first.id));
        let third = run_with(vec![], Some(second.id));
        let stray = run_with(vec![], None);
        let ids = |runs: Vec<RunRecord>| runs.iter().map(|r| r.id).collect::<Vec<_>>();
        let all = vec![third.clone(), stray, first.clone(), second.clone()];
        assert_eq!(
            ids(in_thread_order(all.clone(), third.id)),
            [first.id, second.id, third.id]
        );
        assert_eq!(ids(in_thread_order(all, second.id)), [first.id, second.id]);
    }
}
