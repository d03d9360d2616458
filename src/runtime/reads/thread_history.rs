//! The history of a conversation thread: its runs in thread order, and the
//! messages a run of the thread continues from (every message of the runs
//! before it, as a model accepts them). Read once per execution, at its
//! first step.

use std::collections::HashMap;

use crate::domain::{Message, RunId, RunRecord};
use crate::runtime::Inner;
use crate::store::StoreError;

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
        let runs = self.store.threads.thread_runs(&run.tenant, &link.id).await?;
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
    use crate::domain::{RunState, Tenant, ThreadId, Timestamp, ToolCall};

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
        run.cancel(String::new(), Timestamp(0)).expect("running");
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
