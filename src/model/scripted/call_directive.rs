//! The scripted model's `call` directive: a prompt containing
//! `call TOOL_NAME {json}` makes the model call that tool with that JSON
//! object as its arguments. Several directives joined by ` then ` or `;`
//! are several calls in one step. Only parsing lives here; the model
//! decides what to do with the result.
//!
//! The directive starts at the first word `call` (any case) that is
//! followed by a tool name and a `{`. The JSON object runs to its closing
//! brace (so `;` or `then` inside JSON strings are fine); after it only
//! whitespace, or a separator and the next directive, may follow.

use serde_json::Value;

/// One tool call the prompt asks for.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Directive {
    pub name: String,
    pub args: Value,
}

/// The calls the prompt asks for: `None` when it holds no directive,
/// `Some(Err(reason))` when it holds one that does not parse.
pub(super) fn parse(prompt: &str) -> Option<Result<Vec<Directive>, String>> {
    let start = prompt
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| at_word_start(prompt, i) && head(&prompt[i..]).is_some())?;
    Some(parse_from(&prompt[start..]))
}

/// Whether byte `i` of `text` starts a word.
fn at_word_start(text: &str, i: usize) -> bool {
    text[..i]
        .chars()
        .next_back()
        .is_none_or(|c| c.is_whitespace() || c == ';')
}

/// `text` without `prefix`, compared ignoring ASCII case.
fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &text[prefix.len()..])
}

/// Splits `call NAME {...` into the name and the text from the `{` on.
fn head(text: &str) -> Option<(&str, &str)> {
    let after_call = strip_prefix_ignore_case(text, "call")?;
    if !after_call.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = after_call.trim_start();
    let name_len = rest
        .find(|c: char| c.is_whitespace() || c == '{')
        .unwrap_or(rest.len());
    if name_len == 0 {
        return None;
    }
    let (name, rest) = rest.split_at(name_len);
    let rest = rest.trim_start();
    rest.starts_with('{').then_some((name, rest))
}

/// Parses directives one after another from the start of `text`.
fn parse_from(mut text: &str) -> Result<Vec<Directive>, String> {
    let mut directives = Vec::new();
    loop {
        let Some((name, json)) = head(text) else {
            return Err(format!(
                "expected `call TOOL {{json}}` after the separator, found {:?}",
                text
            ));
        };
        let mut values = serde_json::Deserializer::from_str(json).into_iter::<Value>();
        let args = match values.next() {
            Some(Ok(args)) => args,
            Some(Err(error)) => return Err(format!("the JSON arguments of {name} do not parse: {error}")),
            None => return Err(format!("the JSON arguments of {name} are missing")),
        };
        let rest = json[values.byte_offset()..].trim_start();
        directives.push(Directive {
            name: name.to_owned(),
            args,
        });
        if rest.is_empty() {
            return Ok(directives);
        }
        let next = rest.strip_prefix(';').or_else(|| {
            strip_prefix_ignore_case(rest, "then").filter(|after| after.starts_with(char::is_whitespace))
        });
        match next {
            Some(next) => text = next.trim_start(),
            None => {
                return Err(format!(
                    "unexpected text after the JSON arguments of {name}: {rest:?} \
                     (join several calls with ` then ` or `;`)"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn calls(prompt: &str) -> Vec<(String, Value)> {
        parse(prompt)
            .expect("a directive")
            .expect("a valid directive")
            .into_iter()
            .map(|d| (d.name, d.args))
            .collect()
    }

    #[test]
    fn one_call_with_its_arguments() {
        assert_eq!(
            calls(
                r#"Please call human_review {"draft": "Dear customer; then more", "instructions": "Tone"}"#
            ),
            [(
                "human_review".to_owned(),
                json!({"draft": "Dear customer; then more", "instructions": "Tone"})
            )]
        );
    }

    #[test]
    fn several_calls_joined_by_then_or_semicolon() {
        let found =
            calls(r#"CALL ask_user {"question": "Q?"} then call human_review {"draft": "D"}; call x {}"#);
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["ask_user", "human_review", "x"]);
        assert_eq!(found[2].1, json!({}));
    }

    #[test]
    fn no_directive_without_a_brace() {
        for prompt in [
            "make an invalid call",
            "call me later",
            "recall x {}",
            "Help me pick a plan",
        ] {
            assert_eq!(parse(prompt), None, "{prompt}");
        }
    }

    #[test]
    fn bad_json_or_trailing_text_is_an_error() {
        for prompt in [
            r#"call human_review {draft: "x"}"#,
            r#"call human_review {"draft": "x""#,
            r#"call human_review {"draft": "x"} please"#,
            r#"call human_review {"draft": "x"} then ask me"#,
        ] {
            assert!(matches!(parse(prompt), Some(Err(_))), "{prompt}");
        }
    }
}
