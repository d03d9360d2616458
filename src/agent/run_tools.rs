//! Tools a run brings for itself: client-executed tools declared in the
//! request that starts it (`StreamAgentRequest.tools`). They are checked
//! when the run starts, stored with the run, and added to the agent's own
//! tools for every step of that run, after a Resume or a restart too.

use std::sync::Arc;

use super::Agent;
use crate::domain::ToolDefinition;
use crate::tools::{ClientTool, RegisteredTool};

/// Most tools one run may declare.
pub(super) const MAX_RUN_TOOLS: usize = 128;

/// A run tool that cannot be used: the request field at fault
/// (`tools[2].name`) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RunToolError {
    pub field: String,
    pub reason: String,
}

impl Agent {
    /// This agent with the run's tools added. Every definition must have a
    /// valid name and input schema, and a name used neither by another run
    /// tool nor by one of the agent's tools.
    pub fn with_run_tools(&self, definitions: &[ToolDefinition]) -> Result<Agent, RunToolError> {
        if definitions.len() > MAX_RUN_TOOLS {
            return Err(RunToolError {
                field: "tools".into(),
                reason: format!("at most {MAX_RUN_TOOLS} tools per run"),
            });
        }
        let mut added = Vec::with_capacity(definitions.len());
        for (index, definition) in definitions.iter().enumerate() {
            let refuse = |part: &str, reason: String| RunToolError {
                field: format!("tools[{index}].{part}"),
                reason,
            };
            crate::tools::client::check_definition(definition)
                .map_err(|error| refuse(error.part, error.reason))?;
            if self.tools.get(&definition.name).is_some() {
                return Err(refuse(
                    "name",
                    format!("agent {} already has a tool named {}", self.id, definition.name),
                ));
            }
            if definitions[..index].iter().any(|d| d.name == definition.name) {
                return Err(refuse("name", format!("{} is declared twice", definition.name)));
            }
            let tool = RegisteredTool::new(Arc::new(ClientTool::new(definition)))
                .map_err(|reason| refuse("input_schema", reason))?;
            added.push((tool, definition.require_approval));
        }
        Ok(self.extended(added))
    }

    /// This agent with a stored run's tools added. They were checked when
    /// the run started; one that no longer fits (the agent has since gained
    /// a tool of that name) is left out, with a warning.
    pub fn with_stored_run_tools(&self, definitions: &[ToolDefinition]) -> Agent {
        let added = definitions
            .iter()
            .filter_map(|definition| {
                if self.tools.get(&definition.name).is_some() {
                    tracing::warn!(
                        agent = %self.id,
                        tool = %definition.name,
                        "a run tool now clashes with an agent tool; the agent's tool is used"
                    );
                    return None;
                }
                match RegisteredTool::new(Arc::new(ClientTool::new(definition))) {
                    Ok(tool) => Some((tool, definition.require_approval)),
                    Err(reason) => {
                        tracing::warn!(agent = %self.id, %reason, "a stored run tool is left out");
                        None
                    }
                }
            })
            .collect();
        self.extended(added)
    }

    fn extended(&self, added: Vec<(RegisteredTool, bool)>) -> Agent {
        let mut agent = self.clone();
        for (tool, require_approval) in added {
            if require_approval {
                agent.approval_required.insert(tool.spec().name.clone());
            }
            agent.tools.extend([tool]);
        }
        agent
    }
}
