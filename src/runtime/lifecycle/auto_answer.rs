//! Auto-resume's reading of a message as the answer to an ask_user
//! question: free text as is; for single- and multi-select questions the
//! option labels, matched exactly, then ignoring case, then as 1-based
//! option numbers (`2`, `1, 3`). A message that matches nothing is an
//! answer error listing the labels. Pure: no I/O, nothing changes.

use crate::domain::{Answer, AnswerError, AskUserPayload, SelectionMode};

/// The request field an auto-resume answer comes from.
const FIELD: &str = "prompt";

/// The answer `text` gives to `question`.
pub(super) fn answer_from_text(question: &AskUserPayload, text: &str) -> Result<Answer, AnswerError> {
    let text = text.trim();
    let labels = question.labels();
    let unmatched = || {
        AnswerError::new(
            FIELD,
            format!(
                "{:?} matches none of the options: answer with an option label or its number (1 to {})",
                crate::domain::clip(text.to_owned(), 200),
                labels.len()
            ),
        )
        .with_labels(labels.clone())
    };
    match question.selection_mode {
        SelectionMode::FreeText if text.is_empty() => {
            Err(AnswerError::new(FIELD, "the answer must not be empty"))
        }
        SelectionMode::FreeText => Ok(Answer::Text(text.to_owned())),
        SelectionMode::SingleSelect => match_one(&labels, text).map(Answer::Text).ok_or_else(unmatched),
        SelectionMode::MultiSelect => match_many(&labels, text)
            .map(Answer::Selections)
            .ok_or_else(unmatched),
    }
}

/// The one label `text` names: exactly, else ignoring case (when that is
/// unambiguous), else by its 1-based number.
fn match_one(labels: &[String], text: &str) -> Option<String> {
    if let Some(label) = labels.iter().find(|label| *label == text) {
        return Some(label.clone());
    }
    let folded = text.to_lowercase();
    let mut caseless = labels.iter().filter(|label| label.to_lowercase() == folded);
    if let (Some(label), None) = (caseless.next(), caseless.next()) {
        return Some(label.clone());
    }
    let number: usize = text.trim_start_matches('#').parse().ok()?;
    labels.get(number.checked_sub(1)?).cloned()
}

/// The labels `text` names: one label (which may contain commas), or
/// several separated by commas (numbers may also be separated by spaces:
/// `1 3`), each matched like [`match_one`]; repeats count once.
fn match_many(labels: &[String], text: &str) -> Option<Vec<String>> {
    if let Some(label) = match_one(labels, text) {
        return Some(vec![label]);
    }
    let mut parts: Vec<&str> = text.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if let [single] = parts[..] {
        let words: Vec<&str> = single.split_whitespace().collect();
        if words.len() > 1 && words.iter().all(|w| w.chars().all(|c| c.is_ascii_digit())) {
            parts = words;
        }
    }
    if parts.is_empty() {
        return None;
    }
    let mut chosen: Vec<String> = Vec::with_capacity(parts.len());
    for part in parts {
        let label = match_one(labels, part)?;
        if !chosen.contains(&label) {
            chosen.push(label);
        }
    }
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AskUserOption;

    fn question(mode: SelectionMode, labels: &[&str]) -> AskUserPayload {
        AskUserPayload {
            question: "?".into(),
            options: labels
                .iter()
                .map(|label| AskUserOption {
                    label: (*label).to_owned(),
                    description: String::new(),
                })
                .collect(),
            selection_mode: mode,
        }
    }

    fn text(answer: Result<Answer, AnswerError>) -> String {
        match answer {
            Ok(Answer::Text(text)) => text,
            other => panic!("expected a text answer, got {other:?}"),
        }
    }

    fn labels(answer: Result<Answer, AnswerError>) -> Vec<String> {
        match answer {
            Ok(Answer::Selections(labels)) => labels,
            other => panic!("expected selections, got {other:?}"),
        }
    }

    #[test]
    fn free_text_is_the_answer() {
        let free = question(SelectionMode::FreeText, &[]);
        assert_eq!(text(answer_from_text(&free, "  Ada Lovelace ")), "Ada Lovelace");
        let empty = answer_from_text(&free, "   ").unwrap_err();
        assert_eq!(empty.field, "prompt");
    }

    #[test]
    fn single_select_matches_exact_then_case_then_number() {
        let plans = question(SelectionMode::SingleSelect, &["Basic", "Pro", "Enterprise"]);
        assert_eq!(text(answer_from_text(&plans, "Pro")), "Pro");
        assert_eq!(text(answer_from_text(&plans, "enterprise")), "Enterprise");
        assert_eq!(text(answer_from_text(&plans, "2")), "Pro");
        assert_eq!(text(answer_from_text(&plans, " 3 ")), "Enterprise");
        for bad in ["4", "0", "-1", "Premium", "1, 2", ""] {
            let error = answer_from_text(&plans, bad).unwrap_err();
            assert_eq!(error.valid_labels, ["Basic", "Pro", "Enterprise"], "{bad}");
        }
    }

    #[test]
    fn an_exact_label_wins_over_a_number() {
        let odd = question(SelectionMode::SingleSelect, &["3", "two", "1"]);
        assert_eq!(text(answer_from_text(&odd, "1")), "1");
        assert_eq!(text(answer_from_text(&odd, "2")), "two");
        let cased = question(SelectionMode::SingleSelect, &["Pro", "PRO"]);
        assert_eq!(text(answer_from_text(&cased, "PRO")), "PRO");
        // Ambiguous ignoring case: no match.
        assert!(answer_from_text(&cased, "pro").is_err());
    }

    #[test]
    fn multi_select_takes_labels_and_numbers() {
        let toppings = question(
            SelectionMode::MultiSelect,
            &["Mushrooms", "Olives", "Peppers", "Basil"],
        );
        assert_eq!(labels(answer_from_text(&toppings, "Olives")), ["Olives"]);
        assert_eq!(
            labels(answer_from_text(&toppings, "1, 3")),
            ["Mushrooms", "Peppers"]
        );
        assert_eq!(
            labels(answer_from_text(&toppings, "1 3")),
            ["Mushrooms", "Peppers"]
        );
        assert_eq!(
            labels(answer_from_text(&toppings, "basil,2, 2")),
            ["Basil", "Olives"]
        );
        for bad in ["1, 5", "Olives, ham", ",", "Mushrooms and Olives"] {
            let error = answer_from_text(&toppings, bad).unwrap_err();
            assert_eq!(error.valid_labels.len(), 4, "{bad}");
        }
    }

    #[test]
    fn a_label_with_a_comma_is_one_label() {
        let sizes = question(SelectionMode::MultiSelect, &["Small, thin", "Large"]);
        assert_eq!(labels(answer_from_text(&sizes, "small, thin")), ["Small, thin"]);
        assert_eq!(labels(answer_from_text(&sizes, "1, 2")), ["Small, thin", "Large"]);
    }
}
