//! Hard limits on what one caller can make the server hold or do: request
//! size, prompt size, conversation length, the size of an ask_user
//! question, steps per run, runs executing at once per tenant, streams open
//! at once per tenant, streams per connection, how long a request's body
//! may take to arrive. Each is a key of the `[limits]` table of `agentd.toml`, with
//! a default that no ordinary use comes near. A request over a limit is
//! refused with an error that names the limit; nothing here enforces them
//! (the runtime, the ask_user tool and the server do).

use std::fmt;
use std::time::Duration;

use serde::Deserialize;

/// How big a question the model may ask the ask_user tool (`[limits]`).
/// Input over a limit is an error result the model sees, like any other
/// invalid input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AskUserLimits {
    pub max_question_chars: usize,
    pub max_options: usize,
    pub max_label_chars: usize,
    pub max_description_chars: usize,
}

impl Default for AskUserLimits {
    fn default() -> Self {
        Limits::default().ask_user()
    }
}

/// `[limits]`: every key optional.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// The largest request message, encoded, in bytes.
    pub max_request_bytes: usize,
    /// The most bytes of conversation a run may start with: the prompt, or
    /// the contents of all its messages together.
    pub max_prompt_bytes: usize,
    /// The most messages a run may start with.
    pub max_messages: usize,
    /// The longest ask_user question, in characters.
    pub max_question_chars: usize,
    /// The most options an ask_user question may offer.
    pub max_options: usize,
    /// The longest option label, in characters.
    pub max_option_label_chars: usize,
    /// The longest option description, in characters.
    pub max_option_description_chars: usize,
    /// The most model steps a run may take (caps `options.max_steps` and
    /// an agent's `max_steps`).
    pub max_steps_per_run: u32,
    /// The most runs of one tenant executing in this server at once
    /// (suspended runs do not count: they hold nothing).
    pub max_concurrent_runs_per_tenant: usize,
    /// The most streams one tenant may have open in this server at once,
    /// across every surface: gRPC's streaming RPCs (WatchRuns among them),
    /// A2A's streams over each binding, AG-UI's and MCP's responses.
    pub max_streams_per_tenant: usize,
    /// The most requests one HTTP/2 connection may have open at once.
    pub max_concurrent_streams_per_connection: u32,
    /// How long a request's body may take to arrive, from its headers on:
    /// a client that trickles it is cut off (HTTP 408, the connection
    /// closed), so that slow clients cannot hold connections.
    #[serde(deserialize_with = "crate::config::duration::deserialize_positive")]
    pub request_body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_request_bytes: 4 * 1024 * 1024,
            max_prompt_bytes: 1024 * 1024,
            max_messages: 1000,
            max_question_chars: 4000,
            max_options: 50,
            max_option_label_chars: 200,
            max_option_description_chars: 2000,
            max_steps_per_run: 100,
            max_concurrent_runs_per_tenant: 256,
            max_streams_per_tenant: 512,
            max_concurrent_streams_per_connection: 256,
            request_body_timeout: Duration::from_secs(30),
        }
    }
}

/// A `[limits]` value that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("limits.{0} must be at least 1")]
pub struct InvalidLimits(pub &'static str);

impl Limits {
    /// Every limit must let something through.
    pub fn validate(&self) -> Result<(), InvalidLimits> {
        let sizes = [
            ("max_request_bytes", self.max_request_bytes),
            ("max_prompt_bytes", self.max_prompt_bytes),
            ("max_messages", self.max_messages),
            ("max_question_chars", self.max_question_chars),
            ("max_options", self.max_options),
            ("max_option_label_chars", self.max_option_label_chars),
            ("max_option_description_chars", self.max_option_description_chars),
            (
                "max_concurrent_runs_per_tenant",
                self.max_concurrent_runs_per_tenant,
            ),
            ("max_streams_per_tenant", self.max_streams_per_tenant),
        ];
        if let Some((name, _)) = sizes.iter().find(|(_, value)| *value == 0) {
            return Err(InvalidLimits(name));
        }
        if self.max_steps_per_run == 0 {
            return Err(InvalidLimits("max_steps_per_run"));
        }
        if self.max_concurrent_streams_per_connection == 0 {
            return Err(InvalidLimits("max_concurrent_streams_per_connection"));
        }
        Ok(())
    }

    /// The limits the ask_user tool checks its input against.
    pub fn ask_user(&self) -> AskUserLimits {
        AskUserLimits {
            max_question_chars: self.max_question_chars,
            max_options: self.max_options,
            max_label_chars: self.max_option_label_chars,
            max_description_chars: self.max_option_description_chars,
        }
    }

    /// Checks the size of the conversation a run starts with.
    pub fn check_conversation<'a>(
        &self,
        field: &'static str,
        contents: impl ExactSizeIterator<Item = &'a str>,
    ) -> Result<(), LimitExceeded> {
        let count = contents.len();
        if count > self.max_messages {
            return Err(LimitExceeded::new(
                "max_messages",
                "messages",
                count,
                self.max_messages,
                "messages",
            ));
        }
        let bytes: usize = contents.map(str::len).sum();
        if bytes > self.max_prompt_bytes {
            return Err(LimitExceeded::new(
                "max_prompt_bytes",
                field,
                bytes,
                self.max_prompt_bytes,
                "bytes",
            ));
        }
        Ok(())
    }

    /// Checks a requested `options.max_steps` (0: the agent's default).
    pub fn check_max_steps(&self, requested: u32) -> Result<(), LimitExceeded> {
        if requested > self.max_steps_per_run {
            return Err(LimitExceeded::new(
                "max_steps_per_run",
                "options.max_steps",
                requested as usize,
                self.max_steps_per_run as usize,
                "steps",
            ));
        }
        Ok(())
    }
}

/// A request field over one of the limits: INVALID_ARGUMENT, naming both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The key in `[limits]`, e.g. `max_prompt_bytes`.
    pub limit: &'static str,
    /// The request field, e.g. `prompt`.
    pub field: &'static str,
    pub actual: usize,
    pub max: usize,
    /// What is counted: `bytes`, `characters`, `messages`, ...
    pub unit: &'static str,
}

impl LimitExceeded {
    pub fn new(
        limit: &'static str,
        field: &'static str,
        actual: usize,
        max: usize,
        unit: &'static str,
    ) -> Self {
        Self {
            limit,
            field,
            actual,
            max,
            unit,
        }
    }
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} has {} {}, over the limit of {} (limits.{})",
            self.field, self.actual, self.unit, self.max, self.limit
        )
    }
}

impl std::error::Error for LimitExceeded {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_zero_is_not() {
        assert_eq!(Limits::default().validate(), Ok(()));
        let limits = Limits {
            max_options: 0,
            ..Limits::default()
        };
        assert_eq!(limits.validate(), Err(InvalidLimits("max_options")));
    }

    #[test]
    fn conversation_is_checked_by_count_then_bytes() {
        let limits = Limits {
            max_messages: 2,
            max_prompt_bytes: 5,
            ..Limits::default()
        };
        assert!(limits
            .check_conversation("prompt", ["ab", "cde"].into_iter())
            .is_ok());
        let over = limits
            .check_conversation("messages", ["ab", "cdef"].into_iter())
            .unwrap_err();
        assert_eq!(
            (over.limit, over.field, over.actual, over.max),
            ("max_prompt_bytes", "messages", 6, 5)
        );
        let many = limits
            .check_conversation("messages", ["a", "b", "c"].into_iter())
            .unwrap_err();
        assert_eq!(many.limit, "max_messages");
        assert_eq!(
            many.to_string(),
            "messages has 3 messages, over the limit of 2 (limits.max_messages)"
        );
    }

    #[test]
    fn steps_are_capped() {
        let limits = Limits {
            max_steps_per_run: 3,
            ..Limits::default()
        };
        assert!(limits.check_max_steps(0).is_ok());
        assert!(limits.check_max_steps(3).is_ok());
        assert_eq!(limits.check_max_steps(4).unwrap_err().limit, "max_steps_per_run");
    }

    #[test]
    fn parses_from_toml() {
        let limits: Limits = toml::from_str("max_options = 3\nmax_request_bytes = 1000").unwrap();
        assert_eq!(limits.request_body_timeout, Duration::from_secs(30));
        let limits: Limits =
            toml::from_str("max_options = 3\nmax_request_bytes = 1000\nrequest_body_timeout = \"2s\"")
                .unwrap();
        assert_eq!(limits.request_body_timeout, Duration::from_secs(2));
        assert!(toml::from_str::<Limits>("request_body_timeout = \"0s\"").is_err());
        assert_eq!(limits.max_options, 3);
        assert_eq!(limits.max_request_bytes, 1000);
        assert_eq!(limits.max_messages, Limits::default().max_messages);
        assert!(toml::from_str::<Limits>("max_optionz = 3").is_err());
    }
}
