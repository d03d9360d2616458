//! What time does to the calls of a suspended run: the reminders sent while
//! they wait (`remind_after` of a tool entry) and what the run's deadline
//! does to the calls nobody answered (`on_expiry`).

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{PendingCall, Timestamp, Waiting};

/// What the model reads when nobody answered a question in time, and the
/// reason of an approval the deadline declined.
pub const NOT_ANSWERED_IN_TIME: &str = "The user did not answer in time.";

/// What a run's deadline does to a call of a tool that still waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExpiry {
    /// The run expires (recorded as `EXPIRED`).
    #[default]
    Expire,
    /// The call is declined as [`NOT_ANSWERED_IN_TIME`] and the run
    /// continues (recorded as `DECLINED`).
    Decline,
    /// The call, which waits for approval, is approved and the run
    /// continues (recorded as `APPROVED`).
    Approve,
}

impl OnExpiry {
    pub fn as_str(self) -> &'static str {
        match self {
            OnExpiry::Expire => "expire",
            OnExpiry::Decline => "decline",
            OnExpiry::Approve => "approve",
        }
    }
}

/// A tool's `remind_after` and `on_expiry`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitPolicy {
    /// When to remind, counted from the moment a call starts waiting.
    pub remind_after: Vec<Duration>,
    pub on_expiry: OnExpiry,
}

/// The [`WaitPolicy`] of each tool of an agent that has one, by tool name;
/// any other tool reminds nobody and expires.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitPolicies(HashMap<String, WaitPolicy>);

impl WaitPolicies {
    pub fn insert(&mut self, tool: impl Into<String>, policy: WaitPolicy) {
        self.0.insert(tool.into(), policy);
    }

    pub fn get(&self, tool: &str) -> Option<&WaitPolicy> {
        self.0.get(tool)
    }

    pub fn on_expiry(&self, tool: &str) -> OnExpiry {
        self.get(tool).map_or(OnExpiry::Expire, |policy| policy.on_expiry)
    }

    /// When the run suspended on `pending` at `now` reminds: each call's
    /// `remind_after` counted from when it started waiting, the times
    /// after `now` and before `expires_at` (the deadline decides then),
    /// in order, each once.
    pub fn reminders(
        &self,
        pending: &[PendingCall],
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Vec<Timestamp> {
        let mut times: Vec<Timestamp> = pending
            .iter()
            .filter_map(|call| Some((call.since.unwrap_or(now), self.get(&call.call.name)?)))
            .flat_map(|(since, policy)| policy.remind_after.iter().map(move |after| since.after(*after)))
            .filter(|at| now < *at && *at < expires_at)
            .collect();
        times.sort_unstable();
        times.dedup();
        times
    }

    /// What the deadline does to `call`: [`OnExpiry::Approve`] approves a
    /// call that waits for approval only; a call of such a tool that waits
    /// on a question of its own is declined.
    pub fn at_deadline(&self, call: &PendingCall) -> OnExpiry {
        match (self.on_expiry(&call.call.name), &call.waiting) {
            (OnExpiry::Approve, Waiting::Suspended { .. }) => OnExpiry::Decline,
            (on_expiry, _) => on_expiry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Args, ToolCall};

    fn waiting(name: &str, since: Option<Timestamp>) -> PendingCall {
        PendingCall {
            call: ToolCall {
                id: format!("call-{name}"),
                name: name.into(),
                args: Args::from(serde_json::json!({})),
            },
            waiting: Waiting::Approval,
            since,
        }
    }

    fn policy(remind_after: &[u64], on_expiry: OnExpiry) -> WaitPolicy {
        WaitPolicy {
            remind_after: remind_after
                .iter()
                .map(|secs| Duration::from_secs(*secs))
                .collect(),
            on_expiry,
        }
    }

    #[test]
    fn reminders_count_from_each_call_and_stop_before_the_deadline() {
        let mut policies = WaitPolicies::default();
        policies.insert("deploy", policy(&[60, 600, 3600], OnExpiry::Decline));
        policies.insert("email", policy(&[60], OnExpiry::Expire));
        let now = Timestamp(1_000_000_000_000);
        let earlier = Timestamp(now.0 - 30_000_000);
        let pending = [
            waiting("deploy", None),
            waiting("email", Some(earlier)),
            waiting("other", None),
        ];
        let deadline = now.after(Duration::from_secs(1800));
        let times = policies.reminders(&pending, now, deadline);
        assert_eq!(
            times,
            [
                earlier.after(Duration::from_secs(60)),
                now.after(Duration::from_secs(60)),
                now.after(Duration::from_secs(600)),
            ]
        );
        // Suspended again later on the calls that still wait: what is past
        // is not sent again, what is to come still counts from then.
        let pending = pending.map(|call| PendingCall {
            since: call.since.or(Some(now)),
            ..call
        });
        let later = now.after(Duration::from_secs(90));
        let times = policies.reminders(&pending, later, later.after(Duration::from_secs(7200)));
        assert_eq!(
            times,
            [
                now.after(Duration::from_secs(600)),
                now.after(Duration::from_secs(3600))
            ]
        );
    }

    #[test]
    fn approve_is_for_approvals_only() {
        let mut policies = WaitPolicies::default();
        policies.insert("deploy", policy(&[], OnExpiry::Approve));
        let approval = waiting("deploy", None);
        assert_eq!(policies.at_deadline(&approval), OnExpiry::Approve);
        let question = PendingCall {
            waiting: Waiting::Suspended {
                payload: crate::SuspendPayload::Custom {
                    data: serde_json::Map::new(),
                },
            },
            ..approval
        };
        assert_eq!(policies.at_deadline(&question), OnExpiry::Decline);
        assert_eq!(policies.at_deadline(&waiting("other", None)), OnExpiry::Expire);
    }
}
