//! The built-in `ask_user` tool: asks the user a question (free text,
//! single-select or multi-select), suspending the run until Resume answers.
//! Outside a run it returns a readable fallback text instead.

use std::collections::HashSet;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::domain::{
    clip, Answer, AnswerError, AskUserOption, AskUserPayload, SelectionMode, SuspendPayload, ToolOutput,
    ToolSpec,
};

use super::{Resumed, Tool, ToolContext, ToolOutcome};
use crate::limits::AskUserLimits;

/// The `ask_user` tool.
pub struct AskUser {
    spec: ToolSpec,
    limits: AskUserLimits,
}

impl Default for AskUser {
    fn default() -> Self {
        Self::new()
    }
}

impl AskUser {
    /// The tool's name, as models call it.
    pub const NAME: &'static str = "ask_user";

    pub fn new() -> Self {
        Self::with_limits(AskUserLimits::default())
    }

    /// The tool, checking its input against `limits`.
    pub fn with_limits(limits: AskUserLimits) -> Self {
        Self {
            limits,
            spec: ToolSpec {
                name: Self::NAME.to_owned(),
                description: "Ask the user a question and wait for the answer. Give options to \
                              let the user choose (single_select by default, or multi_select); \
                              leave them out for a free-text answer."
                    .to_owned(),
                input_schema: input_schema(),
                source: "builtin",
                resume_schema: None,
            },
        }
    }

    /// Checks the model's input and resolves the selection mode; the error
    /// is the text the model gets back.
    pub fn parse(&self, args: &Value) -> Result<AskUserPayload, String> {
        check_shape(args).map_err(|reason| format!("Failed to ask user: {reason}."))?;
        // Read from the arguments in place: no copy of them first.
        let input = Input::deserialize(args)
            .map_err(|e| format!("Failed to ask user: {}.", clip(e.to_string(), MAX_QUOTED)))?;
        input
            .validate(&self.limits)
            .map_err(|reason| format!("Failed to ask user: {reason}."))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    question: String,
    #[serde(default)]
    options: Option<Vec<AskUserOption>>,
    #[serde(default)]
    selection_mode: Option<ModeInput>,
}

#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ModeInput {
    SingleSelect,
    MultiSelect,
}

/// How much of the input an error message may quote back.
const MAX_QUOTED: usize = 300;

/// The input and each option must be JSON objects (serde would also take
/// an array of field values for a struct).
fn check_shape(args: &Value) -> Result<(), &'static str> {
    let Some(object) = args.as_object() else {
        return Err("the input must be a JSON object");
    };
    if let Some(Value::Array(options)) = object.get("options") {
        if !options.iter().all(Value::is_object) {
            return Err("each option must be a JSON object with a label");
        }
    }
    Ok(())
}

/// `what` has more characters than `limit` allows.
fn check_chars(what: &str, text: &str, max: usize, limit: &str) -> Result<(), String> {
    // Counting stops one past the limit: a huge text costs no more.
    let count = text.chars().take(max.saturating_add(1)).count();
    if count > max {
        return Err(format!("{what} is longer than {max} characters (limits.{limit})"));
    }
    Ok(())
}

impl Input {
    fn validate(self, limits: &AskUserLimits) -> Result<AskUserPayload, String> {
        if self.question.trim().is_empty() {
            return Err("question must not be empty".into());
        }
        check_chars(
            "question",
            &self.question,
            limits.max_question_chars,
            "max_question_chars",
        )?;
        let options = self.options.unwrap_or_default();
        if options.len() > limits.max_options {
            return Err(format!(
                "{} options are more than {} (limits.max_options)",
                options.len(),
                limits.max_options
            ));
        }
        let selection_mode = match (self.selection_mode, options.is_empty()) {
            (Some(_), true) => return Err("selectionMode requires options".into()),
            (None, true) => SelectionMode::FreeText,
            (None | Some(ModeInput::SingleSelect), false) => SelectionMode::SingleSelect,
            (Some(ModeInput::MultiSelect), false) => SelectionMode::MultiSelect,
        };
        let mut seen = HashSet::new();
        for (index, option) in options.iter().enumerate() {
            if option.label.trim().is_empty() {
                return Err("option labels must not be empty".into());
            }
            check_chars(
                &format!("options[{index}].label"),
                &option.label,
                limits.max_label_chars,
                "max_option_label_chars",
            )?;
            check_chars(
                &format!("options[{index}].description"),
                &option.description,
                limits.max_description_chars,
                "max_option_description_chars",
            )?;
            if !seen.insert(option.label.as_str()) {
                return Err(format!(
                    "option labels must be unique (\"{}\" appears twice)",
                    option.label
                ));
            }
        }
        Ok(AskUserPayload {
            question: self.question,
            options,
            selection_mode,
        })
    }
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "description": "The question to ask the user."},
            "options": {
                "type": "array",
                "description": "Choices to offer; leave out for a free-text answer.",
                "items": {
                    "type": "object",
                    "properties": {
                        "label": {"type": "string", "description": "Short, unique label."},
                        "description": {"type": "string", "description": "What the option means."}
                    },
                    "required": ["label"]
                }
            },
            "selectionMode": {
                "type": "string",
                "enum": ["single_select", "multi_select"],
                "description": "How many options the user may pick; requires options. Defaults to single_select."
            }
        },
        "required": ["question"]
    })
}

#[async_trait]
impl Tool for AskUser {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// It only suspends the run.
    fn has_side_effects(&self) -> bool {
        false
    }

    async fn execute(&self, args: &Value, ctx: ToolContext) -> ToolOutcome {
        match self.parse(args) {
            Err(message) => ToolOutcome::Done(ToolOutput::error(message)),
            Ok(payload) if ctx.can_suspend() => ToolOutcome::Suspend(SuspendPayload::AskUser(payload)),
            Ok(payload) => ToolOutcome::Done(ToolOutput::ok(payload.fallback_text())),
        }
    }

    fn resume(&self, payload: &SuspendPayload, answer: &Answer) -> Result<Resumed, AnswerError> {
        let SuspendPayload::AskUser(question) = payload else {
            return super::resume_with_data(payload, answer).map(Resumed::Output);
        };
        if *answer == Answer::Declined {
            return Ok(Resumed::Output(ToolOutput::ok(crate::domain::DECLINED_TO_ANSWER)));
        }
        answer_text(question, answer)
            .map(|text| Resumed::Output(ToolOutput::ok(format!("User answered: {text}"))))
    }
}

/// An answer's text as an error may quote it: clipped, since a caller's
/// answer may be huge.
fn quoted(text: &str) -> String {
    clip(text.to_owned(), MAX_QUOTED)
}

/// Checks that `answer` fits `question` and returns the answer as text.
fn answer_text(question: &AskUserPayload, answer: &Answer) -> Result<String, AnswerError> {
    let labels = || question.labels();
    let is_label = |candidate: &str| question.options.iter().any(|o| o.label == candidate);
    match (question.selection_mode, answer) {
        (SelectionMode::FreeText, Answer::Text(text)) if text.trim().is_empty() => {
            Err(AnswerError::new("text", "the answer must not be empty"))
        }
        (SelectionMode::FreeText, Answer::Text(text)) => Ok(text.clone()),
        (SelectionMode::FreeText, other) => Err(AnswerError::new(
            other.field(),
            "this question takes a free-text answer: send text",
        )),
        (SelectionMode::SingleSelect, Answer::Text(text)) if is_label(text) => Ok(text.clone()),
        (SelectionMode::SingleSelect, Answer::Text(text)) => Err(AnswerError::new(
            "text",
            format!("\"{}\" is not one of the options", quoted(text)),
        )
        .with_labels(labels())),
        (SelectionMode::SingleSelect, other) => Err(AnswerError::new(
            other.field(),
            "this is a single-select question: send text with one option label",
        )
        .with_labels(labels())),
        (SelectionMode::MultiSelect, Answer::Selections(chosen)) => {
            if chosen.is_empty() {
                return Err(
                    AnswerError::new("selections.labels", "choose at least one option").with_labels(labels()),
                );
            }
            let mut seen = HashSet::new();
            for label in chosen {
                if !is_label(label) {
                    return Err(AnswerError::new(
                        "selections.labels",
                        format!("\"{}\" is not one of the options", quoted(label)),
                    )
                    .with_labels(labels()));
                }
                if !seen.insert(label.as_str()) {
                    return Err(AnswerError::new(
                        "selections.labels",
                        format!("\"{}\" is chosen more than once", quoted(label)),
                    )
                    .with_labels(labels()));
                }
            }
            Ok(chosen.join(", "))
        }
        (SelectionMode::MultiSelect, other) => Err(AnswerError::new(
            other.field(),
            "this is a multi-select question: send selections",
        )
        .with_labels(labels())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: Value, ctx: ToolContext) -> ToolOutcome {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(AskUser::new().execute(&args, ctx))
    }

    #[test]
    fn selection_mode_without_options_is_an_error_result() {
        let outcome = run(
            json!({"question": "Q?", "selectionMode": "multi_select"}),
            ToolContext::IN_RUN,
        );
        assert_eq!(
            outcome,
            ToolOutcome::Done(ToolOutput::error(
                "Failed to ask user: selectionMode requires options."
            ))
        );
    }

    #[test]
    fn a_declined_question_tells_the_model_so() {
        let question = SuspendPayload::AskUser(AskUserPayload {
            question: "Which plan?".into(),
            options: vec![AskUserOption {
                label: "Pro".into(),
                description: String::new(),
            }],
            selection_mode: SelectionMode::SingleSelect,
        });
        assert_eq!(
            AskUser::new().resume(&question, &Answer::Declined),
            Ok(Resumed::Output(ToolOutput::ok("User declined to answer.")))
        );
    }

    #[test]
    fn options_default_to_single_select() {
        let outcome = run(
            json!({"question": "Q?", "options": [{"label": "a"}]}),
            ToolContext::IN_RUN,
        );
        let ToolOutcome::Suspend(SuspendPayload::AskUser(payload)) = outcome else {
            panic!("expected a suspension, got {outcome:?}");
        };
        assert_eq!(payload.selection_mode, SelectionMode::SingleSelect);
    }

    #[test]
    fn fallback_outside_a_run_lists_options_and_mode() {
        let args = json!({"question": "Pick", "options": [{"label": "a"}, {"label": "b"}], "selectionMode": "multi_select"});
        assert_eq!(
            run(args, ToolContext::STANDALONE),
            ToolOutcome::Done(ToolOutput::ok(
                "[Question for user]: Pick\nOptions: a, b\nSelection mode: multi_select"
            ))
        );
    }

    #[test]
    fn labels_must_be_unique_and_non_empty() {
        for options in [json!([{"label": "a"}, {"label": "a"}]), json!([{"label": " "}])] {
            let outcome = run(json!({"question": "Q?", "options": options}), ToolContext::IN_RUN);
            assert!(
                matches!(outcome, ToolOutcome::Done(ToolOutput { is_error: true, .. })),
                "{outcome:?}"
            );
        }
    }

    #[test]
    fn multi_select_answer_is_joined_in_order_given() {
        let payload = AskUserPayload {
            question: "Q".into(),
            options: vec![
                AskUserOption {
                    label: "a".into(),
                    description: String::new(),
                },
                AskUserOption {
                    label: "b".into(),
                    description: String::new(),
                },
            ],
            selection_mode: SelectionMode::MultiSelect,
        };
        let answer = Answer::Selections(vec!["b".into(), "a".into()]);
        assert_eq!(answer_text(&payload, &answer).unwrap(), "b, a");
        let duplicate = Answer::Selections(vec!["a".into(), "a".into()]);
        assert_eq!(
            answer_text(&payload, &duplicate).unwrap_err().field,
            "selections.labels"
        );
    }
}
