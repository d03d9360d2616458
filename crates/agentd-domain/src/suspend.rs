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

/// An MCP server's request for input (MCP elicitation), made during a call
/// of one of its tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Elicitation {
    /// The server, as `[[mcp_servers]]` names it.
    pub server: String,
    pub message: String,
    pub request: ElicitationRequest,
    /// What the tool needs to go on with the call once answered (the MCP
    /// request it answers, or the state it retries with), opaque to all
    /// but the tool, and never shown.
    pub continuation: Value,
}

impl Elicitation {
    /// The request as readable text, for a client that cannot show a form.
    pub fn fallback_text(&self) -> String {
        match &self.request {
            ElicitationRequest::Form { requested_schema } => {
                let fields: Vec<&str> = requested_schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|properties| properties.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                if fields.is_empty() {
                    format!("[{} asks]: {}", self.server, self.message)
                } else {
                    format!(
                        "[{} asks]: {}\nFields: {}",
                        self.server,
                        self.message,
                        fields.join(", ")
                    )
                }
            }
            ElicitationRequest::Url { url } => {
                format!("[{} asks]: {}\nOpen: {url}", self.server, self.message)
            }
        }
    }
}

/// What an MCP server asks a person to do.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationRequest {
    /// Fill in a form: an object of flat fields, as a JSON Schema.
    Form { requested_schema: Map<String, Value> },
    /// Open a page outside agentd, then accept or decline.
    Url { url: String },
}

/// What a person did with an MCP server's request for input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
}

impl ElicitationAction {
    /// The action's name in MCP (`accept`, `decline`, `cancel`).
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitationAction::Accept => "accept",
            ElicitationAction::Decline => "decline",
            ElicitationAction::Cancel => "cancel",
        }
    }
}

/// A person's response to an MCP server's request for input: what the
/// server receives, exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitationResponse {
    pub action: ElicitationAction,
    /// With `accept` of a form: the values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

/// What a suspended call asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SuspendPayload {
    AskUser(AskUserPayload),
    Custom { data: Map<String, Value> },
    ClientTool { tool_name: String, args: Value },
    Elicitation(Elicitation),
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
    Elicitation(ElicitationResponse),
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
            Answer::Elicitation(_) => "elicitation",
            Answer::Declined => "declined",
        }
    }
}

/// What the model reads when the person declined to answer a question.
pub const DECLINED_TO_ANSWER: &str = "User declined to answer.";

/// Why an answer does not fit what it answers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}{field}: {reason}", self.prefix())]
pub struct AnswerError {
    /// The request field at fault, e.g. `text` or `selections.labels`.
    pub field: &'static str,
    pub reason: String,
    /// For select questions: the labels that would be accepted.
    pub valid_labels: Vec<String>,
    /// For a form: each field at fault (e.g. `elicitation.content.email`)
    /// with what is wrong with it.
    pub violations: Vec<(String, String)>,
    /// When several calls are answered at once: the position of the answer
    /// at fault among them, and the call it names (if it names one).
    pub of: Option<(usize, Option<String>)>,
}

impl AnswerError {
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
            valid_labels: Vec::new(),
            violations: Vec::new(),
            of: None,
        }
    }

    /// `answers[i].` for an answer among several, else nothing.
    pub fn prefix(&self) -> String {
        match &self.of {
            Some((position, _)) => format!("answers[{position}]."),
            None => String::new(),
        }
    }

    /// The same error, of the answer at `position` (naming `tool_call_id`)
    /// among several.
    pub fn at(mut self, position: usize, tool_call_id: Option<String>) -> Self {
        self.of = Some((position, tool_call_id));
        self
    }

    pub fn with_violations(mut self, violations: Vec<(String, String)>) -> Self {
        self.violations = violations;
        self
    }

    pub fn with_labels(mut self, labels: Vec<String>) -> Self {
        self.valid_labels = labels;
        self
    }
}
