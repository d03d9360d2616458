//! Decisions (who decided a run's calls) -> their proto messages.

use crate::domain::{Decision, DecisionOutcome, DecisionSource};
use crate::pb;

use super::value::timestamp;

pub(super) fn decision_to_proto(decision: &Decision) -> pb::Decision {
    let Decision {
        tool_call_id,
        outcome,
        decided_by,
        source,
        rule,
        time,
    } = decision;
    pb::Decision {
        tool_call_id: tool_call_id.clone(),
        outcome: outcome_to_proto(*outcome) as i32,
        decided_by: decided_by.clone(),
        source: source_to_proto(*source) as i32,
        rule: rule.clone(),
        time: Some(timestamp(*time)),
    }
}

pub(super) fn decisions_to_proto(decisions: &[Decision]) -> Vec<pb::Decision> {
    decisions.iter().map(decision_to_proto).collect()
}

fn outcome_to_proto(outcome: DecisionOutcome) -> pb::DecisionOutcome {
    match outcome {
        DecisionOutcome::Answered => pb::DecisionOutcome::Answered,
        DecisionOutcome::Approved => pb::DecisionOutcome::Approved,
        DecisionOutcome::Declined => pb::DecisionOutcome::Declined,
        DecisionOutcome::Cancelled => pb::DecisionOutcome::Cancelled,
        DecisionOutcome::Expired => pb::DecisionOutcome::Expired,
    }
}

fn source_to_proto(source: DecisionSource) -> pb::DecisionSource {
    match source {
        DecisionSource::Grpc => pb::DecisionSource::Grpc,
        DecisionSource::GrpcWeb => pb::DecisionSource::GrpcWeb,
        DecisionSource::Inbox => pb::DecisionSource::Inbox,
        DecisionSource::A2a => pb::DecisionSource::A2a,
        DecisionSource::Mcp => pb::DecisionSource::Mcp,
        DecisionSource::AgUi => pb::DecisionSource::AgUi,
        DecisionSource::Thread => pb::DecisionSource::Thread,
        DecisionSource::Rule => pb::DecisionSource::Rule,
        DecisionSource::Grant => pb::DecisionSource::Grant,
        DecisionSource::Deadline => pb::DecisionSource::Deadline,
    }
}
