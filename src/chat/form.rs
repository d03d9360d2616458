//! An MCP server's request for input at the terminal: a form asked field
//! by field from its schema (a list for an enum, yes/no for a boolean, a
//! line for text and numbers, each re-asked until it fits its type), or a
//! page to open. The server's own checks (formats, ranges) are Resume's:
//! an answer it refuses is asked again by the session.

use std::io::{self, Write};

use serde_json::{Map, Value};

use super::printable::printable;
use super::question::{Ask, Choice, Pending};
use super::terminal::{self, Screen};
use crate::grpc::convert::json_to_struct;
use crate::pb;
use crate::pb::resume_request::Answer;

/// Asks `pending` (an [`Ask::Elicit`]) at the terminal.
pub(super) fn prompt(screen: &mut Screen, pending: &Pending) -> io::Result<Answer> {
    let Ask::Elicit {
        server,
        message,
        schema,
        url,
    } = &pending.ask
    else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a request for input",
        ));
    };
    writeln!(screen, "{} asks: {}", printable(server), printable(message))?;
    if let Some(url) = url {
        writeln!(screen, "  {}", printable(url))?;
        let opened = terminal::confirm(screen, "Open it and go on?")?;
        let action = if opened {
            pb::ElicitationAction::Accept
        } else {
            pb::ElicitationAction::Decline
        };
        return Ok(respond(action, None));
    }
    if !terminal::confirm(screen, "Fill in the form? (no declines)")? {
        return Ok(respond(pb::ElicitationAction::Decline, None));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = Map::new();
    if let Some(fields) = schema.get("properties").and_then(Value::as_object) {
        for (name, field) in fields {
            if let Some(value) = ask_field(screen, name, field, required.contains(&name.as_str()))? {
                content.insert(name.clone(), value);
            }
        }
    }
    Ok(respond(
        pb::ElicitationAction::Accept,
        Some(json_to_struct(&Value::Object(content))),
    ))
}

fn respond(action: pb::ElicitationAction, content: Option<prost_types::Struct>) -> Answer {
    Answer::Elicitation(pb::ElicitationResponse {
        action: action as i32,
        content,
    })
}

/// The options of an enum field: `oneOf`/`anyOf` of `{const, title}`, or
/// `enum` (with `enumNames`, the older spelling of titles).
fn choices(field: &Value) -> Option<Vec<Choice>> {
    let titled = field
        .get("oneOf")
        .or_else(|| field.get("anyOf"))
        .and_then(Value::as_array);
    if let Some(options) = titled {
        return Some(
            options
                .iter()
                .filter_map(|option| {
                    let label = option.get("const")?.as_str()?.to_owned();
                    let title = option.get("title").and_then(Value::as_str).unwrap_or_default();
                    Some(Choice {
                        label,
                        description: title.to_owned(),
                    })
                })
                .collect(),
        );
    }
    let names = field.get("enumNames").and_then(Value::as_array);
    field.get("enum").and_then(Value::as_array).map(|values| {
        values
            .iter()
            .enumerate()
            .filter_map(|(i, value)| {
                let title = names.and_then(|names| names.get(i)).and_then(Value::as_str);
                Some(Choice {
                    label: value.as_str()?.to_owned(),
                    description: title.unwrap_or_default().to_owned(),
                })
            })
            .collect()
    })
}

/// One field's value; `None` when an optional field is left empty.
fn ask_field(screen: &mut Screen, name: &str, field: &Value, required: bool) -> io::Result<Option<Value>> {
    let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
    let mut question = match field.get("description").and_then(Value::as_str) {
        Some(description) => format!("{title} ({description})"),
        None => title.to_owned(),
    };
    if let Some(default) = field.get("default") {
        question.push_str(&format!(" [default {default}]"));
    }
    let kind = field.get("type").and_then(Value::as_str).unwrap_or("string");
    if kind == "array" {
        let options = field.get("items").and_then(choices).unwrap_or_default();
        if !options.is_empty() {
            let picked = terminal::choose(screen, &question, &options, true)?;
            let labels = picked.iter().map(|i| Value::String(options[*i].label.clone()));
            return Ok(Some(Value::Array(labels.collect())));
        }
    }
    if let Some(options) = choices(field).filter(|options| !options.is_empty()) {
        let picked = terminal::choose(screen, &question, &options, false)?;
        return Ok(picked.first().map(|i| Value::String(options[*i].label.clone())));
    }
    if kind == "boolean" {
        return terminal::confirm(screen, &question).map(|yes| Some(Value::Bool(yes)));
    }
    loop {
        let typed = if required {
            terminal::ask_text(screen, &question)?
        } else {
            terminal::ask_optional(screen, &format!("{question} (optional)"))?
        };
        let typed = typed.ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "input closed"))?;
        let typed = typed.trim();
        if typed.is_empty() {
            if let Some(default) = field.get("default") {
                return Ok(Some(default.clone()));
            }
            if !required {
                return Ok(None);
            }
        }
        let value = match kind {
            "integer" => typed.parse::<i64>().ok().map(Value::from),
            "number" => typed
                .parse::<f64>()
                .ok()
                .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number)),
            _ => (!typed.is_empty()).then(|| Value::String(typed.to_owned())),
        };
        match value {
            Some(value) => return Ok(Some(value)),
            None => {
                writeln!(
                    screen,
                    "{name} must be {}",
                    if kind == "string" { "given" } else { kind }
                )?;
                screen.flush()?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn titled_options_and_plain_enums_are_choices() {
        let titled = json!({"type": "string", "oneOf": [
            {"const": "eco", "title": "Economy"},
            {"const": "biz", "title": "Business"},
        ]});
        let labels: Vec<(String, String)> = choices(&titled)
            .unwrap()
            .into_iter()
            .map(|c| (c.label, c.description))
            .collect();
        assert_eq!(
            labels,
            vec![
                ("eco".into(), "Economy".into()),
                ("biz".into(), "Business".into())
            ]
        );
        let plain = json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]});
        assert_eq!(choices(&plain).unwrap()[1].description, "B");
        assert!(choices(&json!({"type": "string"})).is_none());
    }
}
