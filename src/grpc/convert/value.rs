//! JSON values (the domain's) <-> google.protobuf.Struct/Value (the wire's).

use prost_types::value::Kind;
use serde_json::{Map, Number, Value};

use crate::domain::Timestamp;

pub(crate) fn json_to_value(value: &Value) -> prost_types::Value {
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(json_to_value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(map_to_struct(map)),
    };
    prost_types::Value { kind: Some(kind) }
}

fn map_to_struct(map: &Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: map.iter().map(|(k, v)| (k.clone(), json_to_value(v))).collect(),
    }
}

/// A JSON object as a Struct; any other JSON value is wrapped as `{"value": v}`.
pub fn json_to_struct(value: &Value) -> prost_types::Struct {
    match value {
        Value::Object(map) => map_to_struct(map),
        other => prost_types::Struct {
            fields: [("value".to_owned(), json_to_value(other))].into_iter().collect(),
        },
    }
}

pub(crate) fn value_to_json(value: &prost_types::Value) -> Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::NumberValue(n)) => number_to_json(*n),
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::ListValue(list)) => Value::Array(list.values.iter().map(value_to_json).collect()),
        Some(Kind::StructValue(s)) => struct_to_json(s),
    }
}

/// Whole numbers come back as JSON integers, so `3` stays `3`, not `3.0`.
fn number_to_json(n: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if n.fract() == 0.0 && n.abs() <= EXACT {
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

pub fn struct_to_json(value: &prost_types::Struct) -> Value {
    Value::Object(
        value
            .fields
            .iter()
            .map(|(k, v)| (k.clone(), value_to_json(v)))
            .collect(),
    )
}

pub fn timestamp(time: Timestamp) -> prost_types::Timestamp {
    let (seconds, nanos) = time.seconds_nanos();
    prost_types::Timestamp { seconds, nanos }
}
