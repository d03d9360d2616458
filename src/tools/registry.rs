//! A set of tools with their compiled input-schema validators, so that
//! arguments are checked once, the same way, before any tool runs.

use std::sync::Arc;

use serde_json::Value;

use super::{Tool, ToolSpec};

/// A tool together with its compiled input-schema validator.
pub struct RegisteredTool {
    tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
}

impl RegisteredTool {
    /// Compiles the tool's input schema; an invalid schema is an error.
    pub fn new(tool: Arc<dyn Tool>) -> Result<Self, String> {
        let validator = jsonschema::validator_for(&tool.spec().input_schema)
            .map_err(|e| format!("tool {}: invalid input schema: {e}", tool.spec().name))?;
        Ok(Self { tool, validator })
    }

    pub fn tool(&self) -> &dyn Tool {
        self.tool.as_ref()
    }

    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    /// Checks `args` against the input schema, naming every violation.
    pub fn validate(&self, args: &Value) -> Result<(), String> {
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .map(|error| {
                let path = error.instance_path().to_string();
                let at = if path.is_empty() { "input" } else { path.as_str() };
                format!("{at}: {error}")
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "Invalid arguments for {}: {}",
                self.spec().name,
                problems.join("; ")
            ))
        }
    }
}

/// The tools of one agent, looked up by name.
#[derive(Default)]
pub struct ToolSet {
    tools: Vec<RegisteredTool>,
}

impl ToolSet {
    pub fn new(tools: Vec<RegisteredTool>) -> Self {
        Self { tools }
    }

    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.iter().find(|t| t.spec().name == name)
    }

    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter().map(RegisteredTool::spec)
    }
}
