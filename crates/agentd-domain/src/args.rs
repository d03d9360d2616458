//! A tool call's arguments: a JSON value, shared, with its JSON text made
//! once. A call is kept in the conversation, in its pending entry and in
//! its chunks, and each of those is written to the store: the arguments
//! are serialised once, then copied.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// The arguments of a tool call (a JSON object, as models give them).
/// Cloning shares them.
#[derive(Clone)]
pub struct Args(Arc<Inner>);

struct Inner {
    value: Value,
    /// `value` as compact JSON, once somebody needed it.
    json: OnceLock<Box<RawValue>>,
}

impl Args {
    pub fn new(value: Value) -> Self {
        Self(Arc::new(Inner {
            value,
            json: OnceLock::new(),
        }))
    }

    /// The arguments as compact JSON, written the first time it is asked
    /// for.
    pub fn json(&self) -> &RawValue {
        self.0.json.get_or_init(|| {
            serde_json::value::to_raw_value(&self.0.value)
                .expect("a JSON value always serialises: its keys are strings")
        })
    }

    /// The length of [`Args::json`].
    pub fn json_len(&self) -> usize {
        self.json().get().len()
    }
}

impl Deref for Args {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl From<Value> for Args {
    fn from(value: Value) -> Self {
        Self::new(value)
    }
}

impl PartialEq for Args {
    fn eq(&self, other: &Self) -> bool {
        self.0.value == other.0.value
    }
}

impl fmt::Debug for Args {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.value.fmt(f)
    }
}

impl Serialize for Args {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn arguments_write_out_as_their_value_would() {
        let value = json!({"question": "Ünlimited \"projects\"?\n", "options": [{"label": "Pro"}], "n": 1.5});
        let args = Args::new(value.clone());
        let shared = args.clone();
        for _ in 0..2 {
            assert_eq!(serde_json::to_string(&shared).unwrap(), value.to_string());
        }
        assert_eq!(args.json_len(), value.to_string().len());
        assert_eq!(serde_json::to_value(&args).unwrap(), value);
        let back: Args = serde_json::from_str(&serde_json::to_string(&args).unwrap()).unwrap();
        assert_eq!(back, args);
        assert_eq!(back["options"][0]["label"], "Pro");
    }
}
