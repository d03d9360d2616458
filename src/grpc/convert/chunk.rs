//! Domain events -> `AgentChunk`.

use crate::domain::{
    Args, Chunk, Elicitation, ElicitationRequest, Event, FinishReason, RunFailure, SelectionMode,
    SuspendPayload, ToolCall, Usage,
};
use crate::pb;
use crate::pb::agent_chunk::Chunk as P;

use super::value::{json_to_struct, timestamp};

pub(crate) fn event_to_proto(run_id: &str, event: &Event) -> pb::AgentChunk {
    pb::AgentChunk {
        run_id: run_id.to_owned(),
        seq: event.seq,
        time: Some(timestamp(event.time)),
        chunk: Some(chunk_to_proto(&event.chunk)),
    }
}

/// A tool call, with the model's arguments when a person edited them.
pub(super) fn call_to_proto(call: &ToolCall, original_args: Option<&Args>) -> pb::ToolCall {
    pb::ToolCall {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: Some(json_to_struct(&call.args)),
        original_args: original_args.map(|args| json_to_struct(args)),
    }
}

fn chunk_to_proto(chunk: &Chunk) -> P {
    match chunk {
        Chunk::Start { agent_id, resumed } => P::Start(pb::RunStarted {
            agent_id: agent_id.clone(),
            resumed: *resumed,
        }),
        Chunk::StepStart { step } => P::StepStart(pb::StepStarted { step: *step }),
        Chunk::TextDelta { text } => P::TextDelta(pb::TextDelta { text: text.clone() }),
        Chunk::ToolCall { call, original_args } => P::ToolCall(call_to_proto(call, original_args.as_ref())),
        Chunk::ToolResult {
            tool_call_id,
            tool_name,
            content,
            is_error,
        } => P::ToolResult(pb::ToolResult {
            tool_call_id: tool_call_id.clone(),
            tool_name: tool_name.clone(),
            content: content.clone(),
            is_error: *is_error,
        }),
        Chunk::ToolCallSuspended {
            call,
            payload,
            expires_at,
        } => P::ToolCallSuspended(pb::ToolCallSuspended {
            suspend_payload: Some(payload_to_proto(payload)),
            expires_at: expires_at.map(timestamp),
            args: Some(json_to_struct(&call.args)),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
        }),
        Chunk::ToolCallApproval { call } => P::ToolCallApproval(pb::ToolCallApproval {
            args: Some(json_to_struct(&call.args)),
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
        }),
        Chunk::StepFinish { step, usage } => P::StepFinish(pb::StepFinished {
            step: *step,
            usage: Some(usage_to_proto(*usage)),
        }),
        Chunk::Finish { reason, usage, text } => P::Finish(pb::RunFinished {
            reason: finish_reason(*reason) as i32,
            usage: Some(usage_to_proto(*usage)),
            text: text.clone(),
        }),
        Chunk::Error(failure) => P::Error(failure_to_proto(failure.clone())),
    }
}

pub(super) fn usage_to_proto(usage: Usage) -> pb::Usage {
    let Usage {
        input_tokens,
        output_tokens,
    } = usage;
    pb::Usage {
        input_tokens,
        output_tokens,
    }
}

pub(super) fn failure_to_proto(failure: RunFailure) -> pb::RunError {
    let RunFailure { code, message } = failure;
    pb::RunError { code, message }
}

fn finish_reason(reason: FinishReason) -> pb::FinishReason {
    match reason {
        FinishReason::Stop => pb::FinishReason::Stop,
        FinishReason::Suspended => pb::FinishReason::Suspended,
        FinishReason::MaxSteps => pb::FinishReason::MaxSteps,
        FinishReason::Cancelled => pb::FinishReason::Cancelled,
        FinishReason::Error => pb::FinishReason::Error,
    }
}

fn elicitation_to_proto(elicitation: &Elicitation) -> pb::Elicitation {
    let (mode, requested_schema, url) = match &elicitation.request {
        ElicitationRequest::Form { requested_schema } => (
            pb::ElicitationMode::Form,
            Some(json_to_struct(&serde_json::Value::Object(
                requested_schema.clone(),
            ))),
            String::new(),
        ),
        ElicitationRequest::Url { url } => (pb::ElicitationMode::Url, None, url.clone()),
    };
    pb::Elicitation {
        server: elicitation.server.clone(),
        message: elicitation.message.clone(),
        requested_schema,
        mode: mode as i32,
        url,
    }
}

pub(super) fn payload_to_proto(payload: &SuspendPayload) -> pb::SuspendPayload {
    use pb::suspend_payload::Kind;
    let kind = match payload {
        SuspendPayload::AskUser(question) => Kind::AskUser(pb::AskUserPayload {
            question: question.question.clone(),
            options: question
                .options
                .iter()
                .map(|o| pb::AskUserOption {
                    label: o.label.clone(),
                    description: o.description.clone(),
                })
                .collect(),
            selection_mode: match question.selection_mode {
                SelectionMode::FreeText => pb::SelectionMode::Unspecified,
                SelectionMode::SingleSelect => pb::SelectionMode::SingleSelect,
                SelectionMode::MultiSelect => pb::SelectionMode::MultiSelect,
            } as i32,
        }),
        SuspendPayload::Custom { data } => {
            Kind::Custom(json_to_struct(&serde_json::Value::Object(data.clone())))
        }
        SuspendPayload::ClientTool { tool_name, args } => Kind::ClientTool(pb::ClientToolCall {
            tool_name: tool_name.clone(),
            args: Some(json_to_struct(args)),
        }),
        SuspendPayload::Elicitation(elicitation) => Kind::Elicitation(elicitation_to_proto(elicitation)),
    };
    pb::SuspendPayload { kind: Some(kind) }
}
