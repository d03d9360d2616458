//! The address people and clients reach the server at (`--public-url`),
//! when it is not the one it listens on: behind a reverse proxy, or under
//! a public host name. `https://agents.example.com`, perhaps with a path
//! prefix (`https://example.com/agentd`). It is checked when the setting is
//! read; the agent cards name it, and its host is allowed in `Host`.

use std::fmt;

use super::origins::parse_origin;
use super::settings::SettingValue;

/// A public URL: an origin (`scheme://host[:port]`, lowercase) and a path
/// prefix without its trailing `/` (empty: none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl {
    origin: String,
    path: String,
}

impl PublicUrl {
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let invalid = |why: &str| {
            Err(format!(
                "{text:?} is not a public URL ({why}): write scheme://host[:port][/path], e.g. https://agents.example.com"
            ))
        };
        if text.contains(['?', '#']) {
            return invalid("it has no query or fragment");
        }
        let authority_end = text.split_once("://").map_or(text.len(), |(scheme, rest)| {
            scheme.len() + 3 + rest.find('/').unwrap_or(rest.len())
        });
        let (origin, path) = text.split_at(authority_end);
        let origin = parse_origin(origin)?;
        Ok(Self {
            origin,
            path: path.trim_end_matches('/').to_owned(),
        })
    }

    /// `scheme://host[:port]`, as a browser sends it in `Origin`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The host (and port) part, as a request names it in `Host`.
    pub fn authority(&self) -> &str {
        self.origin
            .split_once("://")
            .map_or("", |(_, authority)| authority)
    }
}

/// The whole URL, without a trailing `/`: paths are appended to it.
impl fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.origin, self.path)
    }
}

impl SettingValue for PublicUrl {
    fn parse(text: &str) -> Result<Self, String> {
        Self::parse(text)
    }

    fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_origin_and_a_path_prefix() {
        let url = PublicUrl::parse("https://Agents.example.com").unwrap();
        assert_eq!(url.to_string(), "https://agents.example.com");
        assert_eq!(url.origin(), "https://agents.example.com");
        assert_eq!(url.authority(), "agents.example.com");
        let url = PublicUrl::parse("http://example.com:8080/agentd/").unwrap();
        assert_eq!(url.to_string(), "http://example.com:8080/agentd");
        assert_eq!(url.authority(), "example.com:8080");
    }

    #[test]
    fn refuses_what_is_not_a_url() {
        for text in [
            "agents.example.com",
            "ftp://a.example",
            "https://a.example/?x=1",
            "https://u@a.example",
        ] {
            assert!(PublicUrl::parse(text).is_err(), "{text}");
        }
    }
}
