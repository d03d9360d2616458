//! The agent a run executes with: the configured agent, plus the
//! client-executed tools the run declared for itself (checked when it
//! starts, taken from the stored run afterwards).

use std::sync::Arc;

use crate::agent::Agent;
use crate::domain::{RunRecord, ToolDefinition};
use crate::runtime::{Inner, RuntimeError};

/// `agent` with the tools of a run that is starting; a definition that
/// cannot be used is INVALID_ARGUMENT naming it (`tools[1].name`).
pub(in crate::runtime) fn with_run_tools(
    agent: Arc<Agent>,
    tools: &[ToolDefinition],
) -> Result<Arc<Agent>, RuntimeError> {
    if tools.is_empty() {
        return Ok(agent);
    }
    Ok(Arc::new(agent.with_run_tools(tools)?))
}

impl Inner {
    /// The agent that continues a stored run, with the run's own tools.
    /// Tells the tools of `run`'s `pending` calls that nobody will answer
    /// them (the run was cancelled or expired).
    pub(in crate::runtime) fn abandon(&self, run: &RunRecord, pending: &[crate::domain::PendingCall]) {
        if let Ok(agent) = self.agent_for_run(run) {
            agent.abandon(pending);
        }
    }

    pub(in crate::runtime) fn agent_for_run(&self, run: &RunRecord) -> Result<Arc<Agent>, RuntimeError> {
        let agent = self
            .agents
            .get(&run.agent_id)
            .ok_or_else(|| RuntimeError::AgentGone(run.agent_id.clone()))?;
        if run.run_tools.is_empty() {
            return Ok(Arc::clone(agent));
        }
        Ok(Arc::new(agent.with_stored_run_tools(&run.run_tools)))
    }
}
