//! Suspension payloads and the answers that resume them, with the rules
//! that say which answer fits which payload.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Args;

/// How a question is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectionMode {
    FreeText,
    SingleSelect,
    MultiSelect,
}

impl SelectionMode {
    /// The name the model uses (`selectionMode`); free text has none.
    pub fn as_str(self) -> &'static str {
        match self {
            SelectionMode::FreeText => "free_text",
            SelectionMode::SingleSelect => "single_select",
            SelectionMode::MultiSelect => "multi_select",
        }
    }
}

/// One option of a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskUserOption {
    pub label: String,
    #[serde(default)]
    pub description: String,
}

/// A question for the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskUserPayload {
    pub question: String,
    pub options: Vec<AskUserOption>,
    pub selection_mode: SelectionMode,
}

impl AskUserPayload {
    pub fn labels(&self) -> Vec<String> {
        self.options.iter().map(|o| o.label.clone()).collect()
    }

    /// The question as readable text: what ask_user returns outside a run,
    /// and what a client that cannot show the typed question reads.
    pub fn fallback_text(&self) -> String {
        let mut text = format!("[Question for user]: {}", self.question);
        if !self.options.is_empty() {
            let labels: Vec<&str> = self.options.iter().map(|o| o.label.as_str()).collect();
            text.push_str(&format!("\nOptions: {}", labels.join(", ")));
            text.push_str(&format!("\nSelection mode: {}", self.selection_mode.as_str()));
        }
        text
    }
}

/// What a suspended call asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SuspendPayload {
    AskUser(AskUserPayload),
    Custom { data: Map<String, Value> },
    ClientTool { tool_name: String, args: Value },
}

/// An answer given through Resume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Answer {
    Text(String),
    Selections(Vec<String>),
    Data(Value),
    Approval {
        approved: bool,
        reason: String,
        /// With `approved`: the arguments the tool runs with instead of the
        /// model's (a person edited them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        edited_args: Option<Args>,
    },
    /// The person saw the question and chose not to answer it (an MCP
    /// client's `decline`): the model learns that, and a call waiting for
    /// approval is declined. No agentd.v1 answer carries it.
    Declined,
}

impl Answer {
    /// The request field that carries this answer.
    pub fn field(&self) -> &'static str {
        match self {
            Answer::Text(_) => "text",
            Answer::Selections(_) => "selections",
            Answer::Data(_) => "data",
            Answer::Approval { .. } => "approval",
            Answer::Declined => "declined",
        }
    }
}

/// What the model reads when the person declined to answer a question.
pub const DECLINED_TO_ANSWER: &str = "User declined to answer.";

/// Why an answer does not fit what it answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct AnswerError {
    /// The request field at fault, e.g. `text` or `selections.labels`.
    pub field: &'static str,
    pub reason: String,
    /// For select questions: the labels that would be accepted.
    pub valid_labels: Vec<String>,
}

impl AnswerError {
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
            valid_labels: Vec::new(),
        }
    }

    pub fn with_labels(mut self, labels: Vec<String>) -> Self {
        self.valid_labels = labels;
        self
    }
}
