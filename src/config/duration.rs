//! How a person writes a duration, wherever they write one (the file, a
//! flag, a variable, a bench option): a number and a unit, `500ms`, `30s`,
//! `10m`, `2h`, `7d`, or several together, `1h30m`. The parsing is
//! humantime's; this module adds the error that says what to write, the
//! short form that warnings suggest, and the units that the deprecated
//! settings (`suspend_ttl_secs`, `lease_ttl_ms`, ...) counted in.

use std::time::Duration;

use serde::Deserialize;

/// What the error messages show as the accepted syntax.
pub const SYNTAX: &str = "a number and a unit, e.g. 500ms, 30s, 10m, 2h, 7d or 1h30m";

/// A duration such as `500ms`, `30s`, `10m`, `2h`, `7d` or `1h30m`.
pub fn parse(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|error| format!("invalid duration {text:?} ({error}): write {SYNTAX}"))
}

/// [`parse`], for a duration that must be more than zero.
pub fn parse_positive(text: &str) -> Result<Duration, String> {
    match parse(text)? {
        Duration::ZERO => Err(format!("invalid duration {text:?}: it must be more than zero")),
        duration => Ok(duration),
    }
}

/// `deserialize_with` for an optional duration written as a string.
pub fn deserialize_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse(&text).map(Some).map_err(serde::de::Error::custom)
}

/// `deserialize_with` for a duration written as a string that must be
/// more than zero.
pub fn deserialize_positive<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_positive(&text).map_err(serde::de::Error::custom)
}

/// `deserialize_with` for a list of durations written as strings, each
/// more than zero (`remind_after = ["10m", "1h"]`).
pub fn deserialize_list<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<Duration>, D::Error> {
    Vec::<String>::deserialize(deserializer)?
        .iter()
        .map(|text| parse_positive(text).map_err(serde::de::Error::custom))
        .collect()
}

/// The shortest exact spelling of `duration` in one unit (`1d`, `90m`,
/// `250ms`), for messages that tell a person what to write.
pub fn short(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    const UNITS: [(&str, u128); 7] = [
        ("d", 86_400_000_000_000),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    let (unit, size) = UNITS
        .into_iter()
        .find(|(_, size)| nanos > 0 && nanos.is_multiple_of(*size))
        .unwrap_or(("s", 1_000_000_000));
    format!("{}{unit}", nanos / size)
}

/// The unit a deprecated setting's plain number counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Milliseconds,
}

impl Unit {
    /// `count` of this unit.
    pub fn of(self, count: u64) -> Duration {
        match self {
            Unit::Seconds => Duration::from_secs(count),
            Unit::Milliseconds => Duration::from_millis(count),
        }
    }
}

/// A duration in each unit, and several together, with what each means:
/// the examples the tests of every source of a duration read.
#[cfg(test)]
pub(crate) const EXAMPLES: [(&str, Duration); 6] = [
    ("500ms", Duration::from_millis(500)),
    ("30s", Duration::from_secs(30)),
    ("10m", Duration::from_secs(600)),
    ("2h", Duration::from_secs(7200)),
    ("7d", Duration::from_secs(7 * 86_400)),
    ("1h30m", Duration::from_secs(5400)),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_parses() {
        let spaced = [(" 1h 30m ", Duration::from_secs(5400)), ("0s", Duration::ZERO)];
        for (text, expected) in EXAMPLES.into_iter().chain(spaced) {
            assert_eq!(parse(text), Ok(expected), "{text:?}");
        }
    }

    #[test]
    fn a_bad_duration_says_what_to_write() {
        for bad in [
            "",
            "30",
            "ten",
            "30w x",
            "-1s",
            "5 parsecs",
            "99999999999999999999d",
        ] {
            let message = parse(bad).expect_err(bad);
            assert!(message.contains(SYNTAX), "{message}");
            assert!(message.contains(&format!("{bad:?}")), "{message}");
        }
        assert!(parse_positive("0s").unwrap_err().contains("more than zero"));
        assert_eq!(parse_positive("1s"), Ok(Duration::from_secs(1)));
    }

    #[test]
    fn short_forms_are_exact_and_parse_back() {
        for (duration, text) in [
            (Duration::from_secs(86_400), "1d"),
            (Duration::from_secs(5400), "90m"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::ZERO, "0s"),
        ] {
            assert_eq!(short(duration), text);
            assert_eq!(parse(text), Ok(duration));
        }
    }
}
