//! A set of tools with their compiled schema validators (input, and resume
//! data for tools that declare one), so that arguments and answers are
//! checked once, the same way, before any tool sees them.

use std::sync::Arc;

use serde_json::Value;

use super::Tool;
use crate::domain::{clip, AnswerError, ToolSpec};

/// A tool together with its compiled input-schema and resume-schema
/// validators.
#[derive(Clone)]
pub struct RegisteredTool {
    tool: Arc<dyn Tool>,
    validator: jsonschema::Validator,
    resume_validator: Option<jsonschema::Validator>,
}

impl RegisteredTool {
    /// Compiles the tool's input schema and its resume schema (if any); an
    /// invalid schema is an error.
    pub fn new(tool: Arc<dyn Tool>) -> Result<Self, String> {
        let spec = tool.spec();
        let validator = jsonschema::validator_for(&spec.input_schema)
            .map_err(|e| format!("tool {}: invalid input schema: {e}", spec.name))?;
        let resume_validator = match &spec.resume_schema {
            Some(schema) => Some(
                jsonschema::validator_for(schema)
                    .map_err(|e| format!("tool {}: invalid resume schema: {e}", spec.name))?,
            ),
            None => None,
        };
        Ok(Self {
            tool,
            validator,
            resume_validator,
        })
    }

    pub fn tool(&self) -> &dyn Tool {
        self.tool.as_ref()
    }

    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    /// Checks `args` against the input schema, naming every violation.
    pub fn validate(&self, args: &Value) -> Result<(), String> {
        let describe = |path: String, error: String| {
            let at = if path.is_empty() { "input" } else { path.as_str() };
            format!("{at}: {error}")
        };
        match violations(&self.validator, args, describe) {
            None => Ok(()),
            Some(problems) => Err(format!("Invalid arguments for {}: {problems}", self.spec().name)),
        }
    }

    /// Checks arguments a person edited before approving a call against
    /// the input schema, naming every violation by its JSON pointer inside
    /// them (`approval.edited_args/draft: ...`).
    pub fn validate_edited(&self, args: &Value) -> Result<(), AnswerError> {
        let describe = |path: String, error: String| format!("approval.edited_args{path}: {error}");
        match violations(&self.validator, args, describe) {
            None => Ok(()),
            Some(problems) => Err(AnswerError::new(
                "approval.edited_args",
                format!(
                    "the edited arguments do not match the input schema of {}: {problems}",
                    self.spec().name
                ),
            )),
        }
    }

    /// Checks resume `data` against the resume schema (if the tool declares
    /// one), naming every violation by its JSON pointer inside `data`
    /// (`data/decision: ...`).
    pub fn validate_resume(&self, data: &Value) -> Result<(), AnswerError> {
        let Some(validator) = &self.resume_validator else {
            return Ok(());
        };
        let describe = |path: String, error: String| format!("data{path}: {error}");
        match violations(validator, data, describe) {
            None => Ok(()),
            Some(problems) => Err(AnswerError::new(
                "data",
                format!(
                    "does not match the resume schema of {}: {problems}",
                    self.spec().name
                ),
            )),
        }
    }
}

/// `None` if `value` satisfies `validator`; else its first violations (at
/// most [`MAX_VIOLATIONS`]), each described by `describe` from the JSON
/// pointer of the offending part (empty for `value` itself) and what is
/// wrong with it, joined by `; `. Both are clipped: the messages quote the
/// input, which may be hostile and huge.
fn violations(
    validator: &jsonschema::Validator,
    value: &Value,
    describe: impl Fn(String, String) -> String,
) -> Option<String> {
    // The common case, without collecting errors.
    if validator.is_valid(value) {
        return None;
    }
    let problems: Vec<String> = validator
        .iter_errors(value)
        .take(MAX_VIOLATIONS)
        .map(|error| {
            describe(
                clip(error.instance_path().to_string(), MAX_POINTER),
                clip(error.to_string(), MAX_MESSAGE),
            )
        })
        .collect();
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// How many violations an error lists.
const MAX_VIOLATIONS: usize = 5;
/// How long a JSON pointer and a violation's message may be.
const MAX_POINTER: usize = 100;
const MAX_MESSAGE: usize = 200;

/// The tools of one agent, looked up by name.
#[derive(Clone, Default)]
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

    /// Adds tools after the ones already in the set.
    pub fn extend(&mut self, tools: impl IntoIterator<Item = RegisteredTool>) {
        self.tools.extend(tools);
    }
}
