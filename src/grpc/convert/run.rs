//! Runs and agents -> their proto messages.

use crate::agent::Agent;
use crate::domain::{PendingCall, Phase, RunRecord, RunStatus, Timestamp, Waiting};
use crate::pb;

use super::chunk::{call_to_proto, failure_to_proto, payload_to_proto, usage_to_proto};
use super::value::{json_to_struct, timestamp};

pub(super) fn status_to_proto(status: RunStatus) -> pb::RunStatus {
    match status {
        RunStatus::Running => pb::RunStatus::Running,
        RunStatus::Suspended => pb::RunStatus::Suspended,
        RunStatus::Completed => pb::RunStatus::Completed,
        RunStatus::Failed => pb::RunStatus::Failed,
        RunStatus::Cancelled => pb::RunStatus::Cancelled,
        RunStatus::Expired => pb::RunStatus::Expired,
    }
}

/// A pending call of a suspension that expires at `expires_at`.
pub(super) fn pending_to_proto(pending: &PendingCall, expires_at: Option<Timestamp>) -> pb::PendingToolCall {
    let (suspend_payload, awaiting_approval) = match &pending.waiting {
        Waiting::Suspended { payload } => (Some(payload_to_proto(payload)), false),
        Waiting::Approval => (None, true),
    };
    pb::PendingToolCall {
        tool_call_id: pending.call.id.clone(),
        tool_name: pending.call.name.clone(),
        args: Some(json_to_struct(&pending.call.args)),
        suspend_payload,
        awaiting_approval,
        expires_at: expires_at.map(timestamp),
    }
}

pub(crate) fn run_to_proto(run: &RunRecord) -> pb::Run {
    let (pending, final_text, error, cancel_reason) = match run.phase() {
        Phase::Suspended { pending, .. } => (&pending[..], "", None, ""),
        Phase::Completed { final_text } => (&[][..], final_text.as_str(), None, ""),
        Phase::Failed { failure } => (&[][..], "", Some(failure_to_proto(failure.clone())), ""),
        Phase::Cancelled { reason } => (&[][..], "", None, reason.as_str()),
        Phase::Running { .. } | Phase::Expired => (&[][..], "", None, ""),
    };
    pb::Run {
        run_id: run.id.to_string(),
        agent_id: run.agent_id.clone(),
        status: status_to_proto(run.status()) as i32,
        pending: pending
            .iter()
            .map(|p| pending_to_proto(p, run.expires_at()))
            .collect(),
        usage: Some(usage_to_proto(run.state.usage)),
        final_text: final_text.to_owned(),
        steps: run.state.steps,
        last_seq: run.last_seq(),
        created_at: Some(timestamp(run.created_at)),
        updated_at: Some(timestamp(run.updated_at)),
        expires_at: run.expires_at().map(timestamp),
        error,
        cancel_reason: cancel_reason.to_owned(),
        metadata: run.metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        thread_id: run
            .thread
            .as_ref()
            .map(|link| link.id.to_string())
            .unwrap_or_default(),
        edited_calls: run
            .state
            .edited_calls
            .iter()
            .map(|edited| call_to_proto(&edited.call, Some(&edited.original_args)))
            .collect(),
        messages: Vec::new(),
        decisions: Vec::new(),
        grants: Vec::new(),
    }
}

/// The run with its conversation, as GetRun returns it.
pub(crate) fn run_with_messages_to_proto(run: &RunRecord) -> pb::Run {
    pb::Run {
        messages: super::message::run_messages(run),
        decisions: super::decision::decisions_to_proto(&run.state.decisions),
        ..run_to_proto(run)
    }
}

pub(crate) fn agent_to_proto(agent: &Agent, is_default: bool) -> pb::Agent {
    pb::Agent {
        agent_id: agent.id.clone(),
        description: agent.description.clone(),
        model: agent.model_name().to_owned(),
        tools: agent
            .tool_specs()
            .map(|spec| pb::ToolInfo {
                name: spec.name.clone(),
                description: spec.description.clone(),
                input_schema: Some(json_to_struct(&spec.input_schema)),
                source: spec.source.to_owned(),
                require_approval: agent.requires_approval(&spec.name),
                resume_schema: spec.resume_schema.as_ref().map(json_to_struct),
            })
            .collect(),
        is_default,
        max_steps: agent.max_steps,
        inbox: Some(pb::InboxSettings {
            metadata_first: agent.inbox_metadata.first.clone(),
            metadata_hidden: agent.inbox_metadata.hidden.clone(),
        }),
    }
}
