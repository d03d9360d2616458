//! ExecuteTool: one tool of an agent, executed here outside any run. There
//! is no run to suspend, store or stream, so nothing else of the runtime
//! takes part.

use serde_json::Value;
use tracing::Instrument;

use crate::domain::{Tenant, ToolOutput, TraceContext};
use crate::propagation;
use crate::runtime::{Runtime, RuntimeError};
use crate::tools::{ToolContext, ToolOutcome};

/// A request to run one tool of an agent outside any run.
#[derive(Clone, Debug, Default)]
pub struct ExecuteTool {
    /// Empty selects the default agent.
    pub agent_id: String,
    pub tool_name: String,
    /// The tool's arguments, checked against its input schema.
    pub args: Value,
    /// The W3C trace context the request came with: the call continues it.
    pub trace: Option<TraceContext>,
}

impl Runtime {
    /// Runs one tool outside any run, for `tenant`: no suspension is
    /// available, so a tool such as ask_user answers with its fallback text.
    pub(in crate::runtime) async fn execute_tool_alone(
        &self,
        tenant: &Tenant,
        request: ExecuteTool,
    ) -> Result<ToolOutput, RuntimeError> {
        let ExecuteTool {
            agent_id,
            tool_name,
            args,
            trace,
        } = request;
        let span = tracing::info_span!(
            "execute_tool",
            %tenant,
            agent = %agent_id,
            tool = %tool_name,
            trace_id = trace.as_ref().map(|trace| tracing::field::display(trace.trace_id())),
        );
        propagation::adopt(&span, trace.as_ref(), None);
        let call = self.call_standalone(&agent_id, &tool_name, &args);
        propagation::scope(trace, call).instrument(span).await
    }

    async fn call_standalone(
        &self,
        agent_id: &str,
        tool_name: &str,
        args: &Value,
    ) -> Result<ToolOutput, RuntimeError> {
        let agent = self
            .inner
            .agents
            .get(agent_id)
            .ok_or_else(|| RuntimeError::AgentNotFound(agent_id.to_owned()))?;
        if !agent.tool_specs().any(|spec| spec.name == tool_name) {
            return Err(RuntimeError::ToolNotFound {
                agent: agent.id.clone(),
                tool: tool_name.to_owned(),
            });
        }
        Ok(
            match agent.call_tool(tool_name, args, ToolContext::STANDALONE).await {
                ToolOutcome::Done(output) => output,
                ToolOutcome::Suspend(_) => ToolOutput::error(format!(
                    "{tool_name} needs a run to suspend in and has no answer outside one"
                )),
            },
        )
    }
}
