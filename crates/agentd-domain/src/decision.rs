//! Who decided a run's tool calls: one [`Decision`] per answer, approval,
//! decline, cancel, rule, grant or deadline, kept with the run. A person's
//! decision names the credential that made it and the surface it came
//! through ([`Decider`], which every surface hands the runtime); the
//! others name the rule, the grant or the deadline. Plain data.

use serde::{Deserialize, Serialize};

use super::{Answer, ElicitationAction, Timestamp};

/// What a decision did with a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOutcome {
    /// A question was answered.
    Answered,
    /// The call runs.
    Approved,
    /// The call does not run, or its question was declined.
    Declined,
    /// The run was cancelled while the call waited.
    Cancelled,
    /// Nobody answered in time.
    Expired,
}

impl DecisionOutcome {
    /// The lowercase name logs use.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionOutcome::Answered => "answered",
            DecisionOutcome::Approved => "approved",
            DecisionOutcome::Declined => "declined",
            DecisionOutcome::Cancelled => "cancelled",
            DecisionOutcome::Expired => "expired",
        }
    }

    /// The outcome of `answer` given to a call.
    pub fn of(answer: &Answer) -> Self {
        match answer {
            Answer::Approval { approved: true, .. } => DecisionOutcome::Approved,
            Answer::Approval { approved: false, .. } | Answer::Declined => DecisionOutcome::Declined,
            Answer::Elicitation(response) if response.action != ElicitationAction::Accept => {
                DecisionOutcome::Declined
            }
            Answer::Text(_) | Answer::Selections(_) | Answer::Data(_) | Answer::Elicitation(_) => {
                DecisionOutcome::Answered
            }
        }
    }
}

/// The surface (or the policy) a decision came through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionSource {
    Grpc,
    GrpcWeb,
    /// The inbox's own gRPC-Web calls.
    Inbox,
    A2a,
    Mcp,
    AgUi,
    /// A new message on the run's thread that auto-resumed it.
    Thread,
    Rule,
    Grant,
    Deadline,
}

impl DecisionSource {
    /// The lowercase name logs use.
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionSource::Grpc => "grpc",
            DecisionSource::GrpcWeb => "grpc_web",
            DecisionSource::Inbox => "inbox",
            DecisionSource::A2a => "a2a",
            DecisionSource::Mcp => "mcp",
            DecisionSource::AgUi => "ag_ui",
            DecisionSource::Thread => "thread",
            DecisionSource::Rule => "rule",
            DecisionSource::Grant => "grant",
            DecisionSource::Deadline => "deadline",
        }
    }
}

/// Who decides, as a surface hands it to the runtime: the name of the
/// caller's credential (see `auth`), and the surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decider {
    pub name: String,
    pub source: DecisionSource,
}

/// `decided_by` of the deadline's decisions.
pub const DEADLINE: &str = "deadline";

impl Decider {
    pub fn new(name: impl Into<String>, source: DecisionSource) -> Self {
        Self {
            name: name.into(),
            source,
        }
    }

    /// The run's time to live.
    pub fn deadline() -> Self {
        Self::new(DEADLINE, DecisionSource::Deadline)
    }

    /// The same caller, through another surface.
    pub fn through(&self, source: DecisionSource) -> Self {
        Self::new(self.name.clone(), source)
    }

    /// This decider's decision on call `tool_call_id`.
    pub fn decide(&self, tool_call_id: &str, outcome: DecisionOutcome, time: Timestamp) -> Decision {
        Decision {
            tool_call_id: tool_call_id.to_owned(),
            outcome,
            decided_by: self.name.clone(),
            source: self.source,
            rule: String::new(),
            time,
        }
    }
}

/// One decision on one tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub tool_call_id: String,
    pub outcome: DecisionOutcome,
    pub decided_by: String,
    pub source: DecisionSource,
    /// A rule's `when`; empty for the other sources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rule: String,
    pub time: Timestamp,
}

impl Decision {
    /// The decision of approval rule `index` (`when`) of `agent`'s `tool`.
    pub fn by_rule(
        tool_call_id: &str,
        outcome: DecisionOutcome,
        (agent, tool, index): (&str, &str, usize),
        when: &str,
        time: Timestamp,
    ) -> Self {
        Self {
            tool_call_id: tool_call_id.to_owned(),
            outcome,
            decided_by: format!("{agent}/{tool}/rules[{index}]"),
            source: DecisionSource::Rule,
            rule: when.to_owned(),
            time,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElicitationResponse;

    #[test]
    fn outcomes_of_answers() {
        let approval = |approved| Answer::Approval {
            approved,
            reason: String::new(),
            edited_args: None,
        };
        assert_eq!(DecisionOutcome::of(&approval(true)), DecisionOutcome::Approved);
        assert_eq!(DecisionOutcome::of(&approval(false)), DecisionOutcome::Declined);
        assert_eq!(DecisionOutcome::of(&Answer::Declined), DecisionOutcome::Declined);
        assert_eq!(
            DecisionOutcome::of(&Answer::Text("Pro".into())),
            DecisionOutcome::Answered
        );
        let declined = ElicitationResponse {
            action: ElicitationAction::Decline,
            content: None,
        };
        assert_eq!(
            DecisionOutcome::of(&Answer::Elicitation(declined)),
            DecisionOutcome::Declined
        );
    }

    #[test]
    fn a_rule_is_named_by_its_place() {
        let decision = Decision::by_rule(
            "call_1",
            DecisionOutcome::Approved,
            ("billing", "refund", 2),
            "args.amount < 100",
            Timestamp(1),
        );
        assert_eq!(decision.decided_by, "billing/refund/rules[2]");
        assert_eq!(decision.source, DecisionSource::Rule);
        assert_eq!(decision.rule, "args.amount < 100");
    }
}
