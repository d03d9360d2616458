//! ExecuteTool: one tool of an agent, executed here outside any run. There
//! is no run to suspend, store or stream, so nothing else of the runtime
//! takes part; but the tool's approval configuration holds as it does in a
//! run: a call that would wait for a person is refused (nobody can approve
//! it here), a rule's decline is refused, a rule's approval lets it run.

use std::collections::BTreeMap;

use serde_json::Value;
use tracing::Instrument;

use crate::agent::{Agent, ApprovalGate, RuleDecision, RuleRun};
use crate::domain::{DecisionOutcome, DecisionSource, Tenant, ToolOutput, TraceContext};
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
        pass_approval(agent, tool_name, args)?;
        let span = tracing::info_span!("tool_call", tool = %tool_name);
        let outcome = agent
            .call_tool(tool_name, args, ToolContext::STANDALONE)
            .instrument(span)
            .await;
        Ok(match outcome {
            ToolOutcome::Done(output) => output,
            ToolOutcome::Suspend(_) => ToolOutput::error(format!(
                "{tool_name} needs a run to suspend in and has no answer outside one"
            )),
        })
    }
}

/// Holds a call outside any run to its tool's approval configuration,
/// evaluated as in a run of `agent` outside a thread and without metadata:
/// `Ok` when it may run (no approval asked, or a rule approves); a rule's
/// decision is logged as a run's is.
fn pass_approval(agent: &Agent, tool: &str, args: &Value) -> Result<(), RuntimeError> {
    let metadata = BTreeMap::new();
    let run = RuleRun {
        agent_id: &agent.id,
        thread_id: "",
        metadata: &metadata,
    };
    let refused_for = |why: String| {
        tracing::info!(%why, "call refused: it waits for approval, and there is no run to wait in");
        Err(RuntimeError::ApprovalRequired {
            agent: agent.id.clone(),
            tool: tool.to_owned(),
            why,
        })
    };
    let rule = match agent.approval_gate(tool, args, run, false) {
        ApprovalGate::Free => return Ok(()),
        ApprovalGate::Required => return refused_for("require_approval".to_owned()),
        ApprovalGate::Rule(rule) => rule,
    };
    let place = format!("{}/{tool}/rules[{}]", agent.id, rule.index);
    let outcome = match rule.then {
        RuleDecision::Ask => return refused_for(format!("approval rule {place} asks: {}", rule.when)),
        RuleDecision::Approve => DecisionOutcome::Approved,
        RuleDecision::Decline => DecisionOutcome::Declined,
    };
    tracing::info!(
        outcome = outcome.as_str(),
        decided_by = %place,
        source = DecisionSource::Rule.as_str(),
        rule = %rule.when,
        "call decided"
    );
    if outcome == DecisionOutcome::Approved {
        return Ok(());
    }
    Err(RuntimeError::ApprovalDeclined {
        agent: agent.id.clone(),
        tool: tool.to_owned(),
        rule: place,
        when: rule.when.clone(),
        reason: rule.reason.clone(),
    })
}
