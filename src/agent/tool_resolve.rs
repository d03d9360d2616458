//! Which tools the entries of an agent's `tools` list stand for: a built-in
//! tool (`ask_user`, `human_review`), a `[[tools]]` entry of `agentd.toml`
//! (client-executed or HTTP), every tool of an MCP server (`mcp:SERVER`) or
//! one of them (`mcp:SERVER/TOOL`). Only name resolution lives here.

use std::collections::HashSet;
use std::sync::Arc;

use super::approval_rules::{ApprovalRule, ToolRules};
use super::{AgentSpec, RegistryError};
use crate::domain::{OnExpiry, WaitPolicies};
use crate::tools::{mcp_reference, AskUser, HumanReview, RegisteredTool, Tool, ToolCatalog, ToolSet};

/// An agent's tools as its entries configure them.
pub(super) struct AgentTools {
    pub tools: ToolSet,
    /// The names of the tools whose every call waits for approval.
    pub approval_required: HashSet<String>,
    /// The compiled `approval_rules` of the tools that have some.
    pub rules: ToolRules,
    /// The `remind_after` and `on_expiry` of the tools that set them.
    pub waits: WaitPolicies,
}

/// The agent's tools, those whose every call waits for approval, and their
/// approval rules, compiled. A tool may appear once, however it is reached.
pub(super) fn agent_tools(spec: &AgentSpec, catalog: &ToolCatalog) -> Result<AgentTools, RegistryError> {
    let mut tools: Vec<RegisteredTool> = Vec::with_capacity(spec.tools.len());
    let mut approval_required = HashSet::new();
    let mut rules = ToolRules::new();
    let mut waits = WaitPolicies::default();
    for entry in &spec.tools {
        let wait_policy = entry.wait_policy();
        if wait_policy
            .as_ref()
            .is_some_and(|policy| policy.on_expiry == OnExpiry::Approve && !entry.may_wait_for_approval())
        {
            return Err(RegistryError::ApproveWithoutApproval {
                agent: spec.id.clone(),
                tool: entry.tool_name().to_owned(),
            });
        }
        let compiled = entry
            .approval_rules()
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                ApprovalRule::compile(index, rule).map_err(|message| RegistryError::ApprovalRule {
                    agent: spec.id.clone(),
                    tool: entry.tool_name().to_owned(),
                    index,
                    message,
                })
            })
            .collect::<Result<Arc<[ApprovalRule]>, _>>()?;
        for tool in resolve(&spec.id, entry.tool_name(), catalog)? {
            let name = tool.spec().name.clone();
            if tools.iter().any(|t| t.spec().name == name) {
                return Err(RegistryError::DuplicateTool {
                    agent: spec.id.clone(),
                    tool: name,
                });
            }
            if entry.require_approval() {
                approval_required.insert(name.clone());
            }
            if let Some(policy) = &wait_policy {
                waits.insert(name.clone(), policy.clone());
            }
            if !compiled.is_empty() {
                rules.insert(name, Arc::clone(&compiled));
            }
            tools.push(RegisteredTool::new(tool).map_err(RegistryError::InvalidTool)?);
        }
    }
    Ok(AgentTools {
        tools: ToolSet::new(tools),
        approval_required,
        rules,
        waits,
    })
}

/// The tools one entry stands for.
fn resolve(agent: &str, entry: &str, catalog: &ToolCatalog) -> Result<Vec<Arc<dyn Tool>>, RegistryError> {
    let unknown = || RegistryError::UnknownTool {
        agent: agent.to_owned(),
        tool: entry.to_owned(),
        known: catalog.known_names().join(", "),
    };
    if let Some((server, tool)) = mcp_reference(entry) {
        let server = catalog.server(server).ok_or_else(unknown)?;
        return match tool {
            None => Ok(server.tools().to_vec()),
            Some(tool) => Ok(vec![Arc::clone(server.tool(tool).ok_or_else(unknown)?)]),
        };
    }
    let tool: Arc<dyn Tool> = match entry {
        AskUser::NAME => Arc::new(AskUser::with_limits(catalog.ask_user_limits())),
        HumanReview::NAME => Arc::new(HumanReview::new()),
        other => Arc::clone(catalog.tool(other).ok_or_else(unknown)?),
    };
    Ok(vec![tool])
}
