//! How deep a request of the JSON bindings nests, checked before it
//! becomes protobuf. prost refuses a message nested deeper than 100
//! levels, and each level of JSON below a `google.protobuf.Struct` (a
//! message's `metadata`, a data part's `data`) takes up to three of them
//! (the map entry, the `Value`, the `Struct`): a request nested deeper than
//! [`MAX_DEPTH`] levels could not be decoded, so it is refused first, as
//! invalid params naming the field, never as an internal error.

use serde_json::Value;

/// The most levels of objects and arrays a request may nest, the request
/// itself being the first: 3 × 32 stays under protobuf's 100.
pub(super) const MAX_DEPTH: usize = 32;

/// One step down a JSON value.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The fields of the A2A messages that hold free-form JSON: a path is
/// named down to the first of them, where the sender's own nesting begins.
const FREE_FORM: [&str; 2] = ["metadata", "data"];

/// The field of `request` that nests deeper than `max` levels, if one
/// does: `message.metadata`, `message.parts[0].data`, or the path to where
/// the limit is crossed when no free-form field is on the way.
pub(super) fn too_deep(request: &Value, max: usize) -> Option<String> {
    let mut path = Vec::new();
    crosses(request, 1, max, &mut path).then(|| name(&path))
}

/// Whether `value`, at `depth`, nests past `max`; `path` then leads to the
/// first container past it.
fn crosses<'a>(value: &'a Value, depth: usize, max: usize, path: &mut Vec<Step<'a>>) -> bool {
    let children: Box<dyn Iterator<Item = (Step<'a>, &'a Value)>> = match value {
        Value::Object(fields) => Box::new(fields.iter().map(|(key, value)| (Step::Key(key), value))),
        Value::Array(items) => Box::new(items.iter().enumerate().map(|(i, value)| (Step::Index(i), value))),
        _ => return false,
    };
    if depth > max {
        return true;
    }
    for (step, child) in children {
        path.push(step);
        if crosses(child, depth + 1, max, path) {
            return true;
        }
        path.pop();
    }
    false
}

/// `path` written as a field name, down to its first free-form field.
fn name(path: &[Step<'_>]) -> String {
    let end = path
        .iter()
        .position(|step| matches!(step, Step::Key(key) if FREE_FORM.contains(key)))
        .map_or(path.len(), |at| at + 1);
    let mut field = String::new();
    for step in &path[..end] {
        match step {
            Step::Key(key) if field.is_empty() => field.push_str(key),
            Step::Key(key) => {
                field.push('.');
                field.push_str(key);
            }
            Step::Index(index) => field.push_str(&format!("[{index}]")),
        }
    }
    field
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `levels` objects nested inside one another: `{"a": {"a": ... {}}}`.
    pub(crate) fn nested(levels: usize) -> Value {
        (0..levels).fold(json!({}), |inner, _| json!({ "a": inner }))
    }

    #[test]
    fn the_field_is_named_down_to_its_free_form_part() {
        let request = json!({"message": {"messageId": "m", "metadata": nested(40)}});
        assert_eq!(too_deep(&request, MAX_DEPTH).as_deref(), Some("message.metadata"));
        let request = json!({"message": {"parts": [{"text": "t"}, {"data": nested(40)}]}});
        assert_eq!(
            too_deep(&request, MAX_DEPTH).as_deref(),
            Some("message.parts[1].data")
        );
        let request = json!({"x": [[[[[[]]]]]]});
        assert_eq!(too_deep(&request, 4).as_deref(), Some("x[0][0][0]"));
    }

    #[test]
    fn requests_within_the_limit_pass() {
        let request = json!({"message": {"metadata": nested(MAX_DEPTH - 3)}});
        assert_eq!(too_deep(&request, MAX_DEPTH), None);
        let request = json!({"message": {"metadata": nested(MAX_DEPTH - 2)}});
        assert!(too_deep(&request, MAX_DEPTH).is_some());
        assert_eq!(too_deep(&json!("text"), 0), None);
    }
}
