//! Agents and the agent loop: a model step, then the tool calls it made,
//! then the next step. The loop does no I/O beyond its model and tools; it
//! reports what happens to a [`ChunkSink`] and leaves storing to the runtime.

mod approval_rules;
mod registry;
mod run_tools;
mod step;
mod tool_entry;
mod tool_resolve;
mod window;

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

pub use approval_rules::{ApprovalRule, ApprovalRuleSpec, RuleDecision, RuleRun, ToolRules};
pub use registry::{AgentRegistry, AgentSpec, InboxMetadata, RegistryError};
pub use run_tools::RunToolError;
pub use step::{ChunkSink, StepEnd};
pub use tool_entry::{ToolEntry, ToolTable};
pub(crate) use window::{compose, HistoryWindow};

use crate::domain::{
    Answer, AnswerError, PendingCall, Resolution, SuspendPayload, ToolCall, ToolOutput, ToolSpec,
    WaitPolicies, Waiting,
};
use crate::model::LanguageModel;
use crate::tools::{AskUser, Resumed, Tool, ToolContext, ToolOutcome, ToolSet};

/// Steps a run may take when neither the agent nor the request says.
pub const DEFAULT_MAX_STEPS: u32 = 10;

/// What the approval configuration does with a call, before it runs: the
/// same for a run's calls and for ExecuteTool's.
#[derive(Clone, Copy, Debug)]
pub enum ApprovalGate<'a> {
    /// This rule holds: it approves, declines or asks.
    Rule(&'a ApprovalRule),
    /// No rule holds, and the call waits for a person's approval
    /// (`require_approval`, or the run's `require_tool_approval`).
    Required,
    /// No rule holds, and the call runs.
    Free,
}

/// An agent: a model, its instructions and its tools.
#[derive(Clone)]
pub struct Agent {
    pub id: String,
    pub description: String,
    /// System instructions placed before the conversation.
    pub instructions: Option<String>,
    pub max_steps: u32,
    /// How long this agent's suspensions wait; `None` takes the server's.
    pub suspend_ttl: Option<std::time::Duration>,
    /// Tools whose every call waits for approval before it runs.
    pub approval_required: HashSet<String>,
    /// The `approval_rules` of the tools that have some, by tool name:
    /// consulted before `approval_required`.
    pub approval_rules: ToolRules,
    /// What time does to its tools' waiting calls: reminders, and the
    /// deadline's decision (`remind_after`, `on_expiry`).
    pub waits: WaitPolicies,
    /// How much of the conversation the model is sent.
    pub history: HistoryWindow,
    /// Which metadata keys the inbox shows first, and which it hides.
    pub inbox_metadata: InboxMetadata,
    model: Arc<dyn LanguageModel>,
    tools: ToolSet,
}

impl Agent {
    pub fn new(
        id: impl Into<String>,
        description: impl Into<String>,
        model: Arc<dyn LanguageModel>,
        tools: ToolSet,
    ) -> Self {
        Self {
            id: id.into(),
            description: description.into(),
            instructions: None,
            max_steps: DEFAULT_MAX_STEPS,
            suspend_ttl: None,
            approval_required: HashSet::new(),
            approval_rules: ToolRules::new(),
            waits: WaitPolicies::default(),
            history: HistoryWindow::default(),
            inbox_metadata: InboxMetadata::default(),
            model,
            tools,
        }
    }

    /// Whether calls of this tool always wait for approval.
    pub fn requires_approval(&self, tool: &str) -> bool {
        self.approval_required.contains(tool)
    }

    /// What the approval configuration does with a call of `tool` with
    /// `args` in `run` (`require_tool_approval`: the run asks that every
    /// call but ask_user's wait): the rule that decides it, if one holds;
    /// otherwise whether it waits for a person. A tool the agent does not
    /// have never waits: its call is an error result at once.
    pub fn approval_gate(
        &self,
        tool: &str,
        args: &Value,
        run: RuleRun<'_>,
        require_tool_approval: bool,
    ) -> ApprovalGate<'_> {
        if let Some(rule) = self.approval_rule(tool, args, run) {
            return ApprovalGate::Rule(rule);
        }
        let known = self.tools.get(tool).is_some();
        let asked = self.requires_approval(tool) || (require_tool_approval && tool != AskUser::NAME);
        if known && asked {
            ApprovalGate::Required
        } else {
            ApprovalGate::Free
        }
    }

    /// The rule that decides a call of `tool` with `args` in `run`, if one
    /// holds (none for arguments that break the tool's schema).
    pub fn approval_rule(&self, tool: &str, args: &Value, run: RuleRun<'_>) -> Option<&ApprovalRule> {
        let rules = self.approval_rules.get(tool)?;
        // Rules rule on a call whose arguments pass the tool's schema (the
        // arguments are checked only for a tool that has rules).
        self.tools.get(tool)?.validate(args).ok()?;
        approval_rules::decide(rules, &self.id, tool, args, run)
    }

    pub fn model_name(&self) -> &str {
        self.model.name()
    }

    pub fn tool_specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.specs()
    }

    /// Whether a call of the tool `name` may act outside the run (see
    /// [`crate::tools::Tool::has_side_effects`]); an unknown tool's call is
    /// an error result, which acts on nothing.
    pub fn has_side_effects(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .is_some_and(|tool| tool.tool().has_side_effects())
    }

    /// Calls a tool by name: unknown tools and arguments that break the
    /// tool's input schema become error results, never failures.
    pub async fn call_tool(&self, name: &str, args: &Value, ctx: ToolContext) -> ToolOutcome {
        let Some(tool) = self.tools.get(name) else {
            return ToolOutcome::Done(ToolOutput::error(format!("Unknown tool: {name}")));
        };
        if let Err(message) = tool.validate(args) {
            return ToolOutcome::Done(ToolOutput::error(message));
        }
        tool.tool().execute(args, ctx).await
    }

    /// Checks arguments a person edited before approving a call of `tool`:
    /// an object that the tool's input schema accepts. A tool that left the
    /// configuration since the call was made has no schema to check
    /// against; its call will be an `Unknown tool` error result.
    fn check_edited_args(&self, tool: &str, args: &Value) -> Result<(), AnswerError> {
        if !args.is_object() {
            return Err(AnswerError::new(
                "approval.edited_args",
                "the edited arguments must be a JSON object",
            ));
        }
        match self.tools.get(tool) {
            Some(tool) => tool.validate_edited(args),
            None => Ok(()),
        }
    }

    /// Checks an answer to a pending call without changing anything.
    pub fn resolve(&self, pending: &PendingCall, answer: &Answer) -> Result<Resolution, AnswerError> {
        match (&pending.waiting, answer) {
            (
                Waiting::Approval,
                Answer::Approval {
                    approved: true,
                    edited_args,
                    ..
                },
            ) => {
                if let Some(args) = edited_args {
                    self.check_edited_args(&pending.call.name, args)?;
                }
                Ok(Resolution::Execute {
                    edited_args: edited_args.clone(),
                })
            }
            (
                Waiting::Approval,
                Answer::Approval {
                    approved: false,
                    edited_args: Some(_),
                    ..
                },
            ) => Err(AnswerError::new(
                "approval.edited_args",
                "edited arguments come with approved = true: a declined call does not run",
            )),
            (
                Waiting::Approval,
                Answer::Approval {
                    approved: false,
                    reason,
                    edited_args: None,
                },
            ) => Ok(Resolution::Output(ToolOutput::error(declined_message(
                &pending.call.name,
                reason,
            )))),
            (Waiting::Approval, Answer::Declined) => Ok(Resolution::Output(ToolOutput::error(format!(
                "The user declined this call of {}",
                pending.call.name
            )))),
            (Waiting::Approval, other) => Err(AnswerError::new(
                other.field(),
                "this call waits for approval: send approval",
            )),
            (Waiting::Suspended { .. }, Answer::Approval { .. }) => Err(AnswerError::new(
                "approval",
                "this call is suspended, not waiting for approval",
            )),
            // Whatever the question, a person may decline to answer it.
            (Waiting::Suspended { .. }, Answer::Declined) => Ok(Resolution::Output(ToolOutput::ok(
                crate::domain::DECLINED_TO_ANSWER,
            ))),
            (Waiting::Suspended { payload }, answer) => match self.tools.get(&pending.call.name) {
                Some(tool) => {
                    // Resume data is checked against the tool's resume
                    // schema before the tool sees it.
                    if let Answer::Data(data) = answer {
                        tool.validate_resume(data)?;
                    }
                    Ok(match tool.tool().resume(payload, answer)? {
                        Resumed::Output(output) => Resolution::Output(output),
                        Resumed::Proceed => Resolution::Proceed,
                    })
                }
                // The tool left the configuration since the run suspended:
                // answers are still checked against the stored payload.
                None => gone_tool_resolution(&pending.call.name, payload, answer),
            },
        }
    }

    /// Tells the tools of `pending` (the calls of a run that was cancelled
    /// or expired) that nobody will answer them.
    pub fn abandon(&self, pending: &[PendingCall]) {
        for call in pending {
            if let (Waiting::Suspended { payload }, Some(tool)) =
                (&call.waiting, self.tools.get(&call.call.name))
            {
                tool.tool().abandon(payload);
            }
        }
    }

    /// Goes on with a call after an answer its tool accepted as
    /// [`Resumed::Proceed`]; a tool that left the configuration meanwhile
    /// is an `Unknown tool` error result.
    pub async fn proceed(
        &self,
        call: &ToolCall,
        payload: &SuspendPayload,
        answer: &Answer,
        ctx: ToolContext,
    ) -> ToolOutcome {
        match self.tools.get(&call.name) {
            Some(tool) => tool.tool().proceed(&call.args, payload, answer, ctx).await,
            None => ToolOutcome::Done(ToolOutput::error(format!("Unknown tool: {}", call.name))),
        }
    }
}

/// The result a declined call of `tool` gives the model, a person's
/// decline or a rule's: `The user declined this call of TOOL: REASON`.
fn declined_message(tool: &str, reason: &str) -> String {
    if reason.is_empty() {
        format!("The user declined this call of {tool}")
    } else {
        format!("The user declined this call of {tool}: {reason}")
    }
}

/// The resolution of an answer to a call whose tool is no longer
/// configured: checked against the stored payload all the same, and the
/// call's result when it fits.
fn gone_tool_resolution(
    tool: &str,
    payload: &SuspendPayload,
    answer: &Answer,
) -> Result<Resolution, AnswerError> {
    match payload {
        SuspendPayload::Elicitation(elicitation) => {
            crate::tools::mcp::check_response(elicitation, answer)?;
            Ok(Resolution::Output(ToolOutput::error(format!(
                "Unknown tool: {tool} (the MCP server {} no longer offers it)",
                elicitation.server
            ))))
        }
        _ => match Tool::resume(&AskUser::new(), payload, answer)? {
            Resumed::Output(output) => Ok(Resolution::Output(output)),
            Resumed::Proceed => Ok(Resolution::Output(ToolOutput::error(format!(
                "Unknown tool: {tool}"
            )))),
        },
    }
}
