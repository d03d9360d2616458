//! The built-in `human_review` tool: asks a person to review a draft before
//! it is used. It suspends the run with a custom payload `{draft,
//! instructions}` and declares the JSON Schema of the resume `data` (a
//! decision: approve, reject or edit), which the agent checks before
//! [`Tool::resume`] sees it. Outside a run it returns a readable fallback.
//! It never stores anything itself.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::{Resumed, Tool, ToolContext, ToolOutcome};
use crate::domain::{Answer, AnswerError, SuspendPayload, ToolOutput, ToolSpec};

/// The `human_review` tool.
pub(crate) struct HumanReview {
    spec: ToolSpec,
}

impl Default for HumanReview {
    fn default() -> Self {
        Self::new()
    }
}

impl HumanReview {
    /// The tool's name, as models call it.
    pub(crate) const NAME: &'static str = "human_review";

    pub(crate) fn new() -> Self {
        Self {
            spec: ToolSpec {
                name: Self::NAME.to_owned(),
                description: "Ask a person to review a draft before it is used, and wait for the \
                              verdict: approved, rejected (with a comment) or edited (with the \
                              revised text)."
                    .to_owned(),
                input_schema: input_schema(),
                source: "builtin",
                resume_schema: Some(resume_schema()),
            },
        }
    }
}

/// What the model passes.
#[derive(Deserialize)]
struct Input {
    draft: String,
    #[serde(default)]
    instructions: Option<String>,
}

/// The reviewer's verdict: the resume `data`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Review {
    decision: Decision,
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    revised_text: Option<String>,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Reject,
    Edit,
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "draft": {"type": "string", "minLength": 1, "description": "The text to review."},
            "instructions": {"type": "string", "description": "What the reviewer should check."}
        },
        "required": ["draft"]
    })
}

/// JSON Schema of the resume `data`; `revised_text` is required when the
/// decision is `edit`.
fn resume_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "enum": ["approve", "reject", "edit"],
                "description": "The reviewer's verdict."
            },
            "comment": {"type": "string", "description": "Why, or what to change."},
            "revised_text": {
                "type": "string",
                "minLength": 1,
                "description": "The draft as the reviewer edited it; required when decision is edit."
            }
        },
        "required": ["decision"],
        "additionalProperties": false,
        "if": {"properties": {"decision": {"const": "edit"}}, "required": ["decision"]},
        "then": {"required": ["revised_text"]}
    })
}

impl Input {
    fn parse(args: &Value) -> Result<Self, String> {
        let input: Input =
            serde_json::from_value(args.clone()).map_err(|e| format!("Failed to request review: {e}."))?;
        if input.draft.trim().is_empty() {
            return Err("Failed to request review: draft must not be empty.".into());
        }
        Ok(input)
    }

    /// The suspension payload; `instructions` only when given.
    fn payload(self) -> SuspendPayload {
        let mut data = Map::new();
        data.insert("draft".into(), Value::String(self.draft));
        if let Some(instructions) = self.instructions {
            data.insert("instructions".into(), Value::String(instructions));
        }
        SuspendPayload::Custom { data }
    }

    /// The text a caller outside any run gets instead of a suspension.
    fn fallback_text(&self) -> String {
        let mut text = format!("[Review requested]: {}", self.draft);
        if let Some(instructions) = self.instructions.as_deref().filter(|i| !i.trim().is_empty()) {
            text.push_str(&format!("\nInstructions: {instructions}"));
        }
        text
    }
}

impl Review {
    /// The result the model sees.
    fn result_text(&self) -> Result<String, AnswerError> {
        let comment = self.comment.as_deref().map(str::trim).filter(|c| !c.is_empty());
        let with_comment = |text: String| match comment {
            Some(comment) => format!("{text}\nComment: {comment}"),
            None => text,
        };
        Ok(match self.decision {
            Decision::Approve => with_comment("Reviewer approved the draft.".to_owned()),
            Decision::Reject => match comment {
                Some(comment) => format!("Reviewer rejected the draft: {comment}"),
                None => "Reviewer rejected the draft.".to_owned(),
            },
            Decision::Edit => match self.revised_text.as_deref().filter(|t| !t.trim().is_empty()) {
                Some(revised) => with_comment(format!("Reviewer edited the draft: {revised}")),
                None => {
                    return Err(AnswerError::new(
                        "data",
                        "data/revised_text: a decision of edit needs the revised text",
                    ))
                }
            },
        })
    }
}

#[async_trait]
impl Tool for HumanReview {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// It only suspends the run.
    fn has_side_effects(&self) -> bool {
        false
    }

    async fn execute(&self, args: &Value, ctx: ToolContext) -> ToolOutcome {
        match Input::parse(args) {
            Err(message) => ToolOutcome::Done(ToolOutput::error(message)),
            Ok(input) if ctx.can_suspend() => ToolOutcome::Suspend(input.payload()),
            Ok(input) => ToolOutcome::Done(ToolOutput::ok(input.fallback_text())),
        }
    }

    fn resume(&self, payload: &SuspendPayload, answer: &Answer) -> Result<Resumed, AnswerError> {
        let (SuspendPayload::Custom { .. }, Answer::Data(data)) = (payload, answer) else {
            return super::resume_with_data(payload, answer).map(Resumed::Output);
        };
        let review: Review = serde_json::from_value(data.clone())
            .map_err(|e| AnswerError::new("data", format!("not a review: {e}")))?;
        review
            .result_text()
            .map(|text| Resumed::Output(ToolOutput::ok(text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: Value, ctx: ToolContext) -> ToolOutcome {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(HumanReview::new().execute(&args, ctx))
    }

    fn resume(data: Value) -> Result<ToolOutput, AnswerError> {
        let payload = SuspendPayload::Custom {
            data: Map::from_iter([("draft".to_owned(), json!("Hi"))]),
        };
        match HumanReview::new().resume(&payload, &Answer::Data(data))? {
            Resumed::Output(output) => Ok(output),
            Resumed::Proceed => panic!("a review's answer is its result"),
        }
    }

    #[test]
    fn suspends_with_draft_and_instructions() {
        let outcome = run(
            json!({"draft": "Hi", "instructions": "Tone"}),
            ToolContext::IN_RUN,
        );
        let ToolOutcome::Suspend(SuspendPayload::Custom { data }) = outcome else {
            panic!("expected a custom suspension, got {outcome:?}");
        };
        assert_eq!(
            Value::Object(data),
            json!({"draft": "Hi", "instructions": "Tone"})
        );
    }

    #[test]
    fn blank_draft_is_an_error_result() {
        let outcome = run(json!({"draft": "  "}), ToolContext::IN_RUN);
        assert_eq!(
            outcome,
            ToolOutcome::Done(ToolOutput::error(
                "Failed to request review: draft must not be empty."
            ))
        );
    }

    #[test]
    fn fallback_outside_a_run() {
        let outcome = run(
            json!({"draft": "Hi", "instructions": "Tone"}),
            ToolContext::STANDALONE,
        );
        assert_eq!(
            outcome,
            ToolOutcome::Done(ToolOutput::ok("[Review requested]: Hi\nInstructions: Tone"))
        );
    }

    #[test]
    fn verdicts_become_result_texts() {
        let text = |data| resume(data).unwrap().content;
        assert_eq!(
            text(json!({"decision": "approve"})),
            "Reviewer approved the draft."
        );
        assert_eq!(
            text(json!({"decision": "approve", "comment": "Nice"})),
            "Reviewer approved the draft.\nComment: Nice"
        );
        assert_eq!(
            text(json!({"decision": "reject", "comment": "Too curt"})),
            "Reviewer rejected the draft: Too curt"
        );
        assert_eq!(
            text(json!({"decision": "edit", "revised_text": "Hello"})),
            "Reviewer edited the draft: Hello"
        );
        assert_eq!(resume(json!({"decision": "edit"})).unwrap_err().field, "data");
    }

    #[test]
    fn resume_schema_compiles_and_requires_revised_text_for_edit() {
        let validator = jsonschema::validator_for(&resume_schema()).unwrap();
        assert!(validator.is_valid(&json!({"decision": "approve"})));
        assert!(!validator.is_valid(&json!({"decision": "edit"})));
        assert!(validator.is_valid(&json!({"decision": "edit", "revised_text": "x"})));
        assert!(!validator.is_valid(&json!({"decision": "maybe"})));
    }
}
