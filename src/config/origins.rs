//! The browser origins allowed to call the server from pages they serve
//! (`--cors-allow-origin`): a list of origins such as
//! `https://app.example.com`, or `*` for any. Each is checked when the
//! setting is read, so that a typo (a path, a missing scheme) stops the
//! server instead of silently allowing nothing. What CORS then answers is
//! `server/web.rs`'s; nothing here knows HTTP beyond the origin's syntax.

use std::fmt;

use serde::Deserialize;

use super::settings::SettingValue;

/// The origins `--cors-allow-origin` allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowedOrigins {
    /// `*`: a page from any origin.
    Any,
    /// These origins exactly (`scheme://host[:port]`, lowercase), at least
    /// one.
    List(Vec<String>),
}

impl AllowedOrigins {
    /// Reads a comma-separated list (`https://a.example, http://localhost:5173`)
    /// or `*`.
    pub fn parse_list(text: &str) -> Result<Self, String> {
        let entries: Vec<&str> = text.split(',').map(str::trim).collect();
        Self::from_entries(&entries)
    }

    fn from_entries(entries: &[&str]) -> Result<Self, String> {
        if entries.iter().all(|entry| entry.is_empty()) {
            return Err("no origin given: write e.g. https://app.example.com, or * for any".to_owned());
        }
        if entries.contains(&"*") {
            return match entries {
                ["*"] => Ok(Self::Any),
                _ => Err("* allows every origin: give it alone, not in a list".to_owned()),
            };
        }
        let mut origins = Vec::with_capacity(entries.len());
        for entry in entries {
            let origin = parse_origin(entry)?;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        Ok(Self::List(origins))
    }

    /// Whether a request's `Origin` header value is allowed.
    pub fn allows(&self, origin: &str) -> bool {
        match self {
            Self::Any => true,
            Self::List(origins) => origins.iter().any(|allowed| allowed.eq_ignore_ascii_case(origin)),
        }
    }
}

impl fmt::Display for AllowedOrigins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::List(origins) => f.write_str(&origins.join(",")),
        }
    }
}

/// One origin as a browser sends it in `Origin`: `http` or `https`, a
/// host, an optional port, nothing after.
pub(super) fn parse_origin(entry: &str) -> Result<String, String> {
    let invalid = |why: &str| {
        Err(format!(
            "{entry:?} is not an origin ({why}): write scheme://host[:port], e.g. https://app.example.com"
        ))
    };
    let Some((scheme, rest)) = entry.split_once("://") else {
        return invalid("no scheme");
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return invalid("the scheme is neither http nor https");
    }
    if rest.is_empty() {
        return invalid("no host");
    }
    if rest.contains(['/', '?', '#']) {
        return invalid("an origin has no path, query or fragment");
    }
    if rest.contains('@') {
        return invalid("an origin has no user name or password");
    }
    let (host, port) = match rest.rsplit_once(':') {
        // An IPv6 address without a port: `[::1]`.
        Some((_, port)) if port.ends_with(']') => (rest, None),
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    if host.is_empty() {
        return invalid("no host");
    }
    let host_ok = if let Some(inner) = host.strip_prefix('[') {
        inner
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
    } else {
        host.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    };
    if !host_ok {
        return invalid("the host has characters a host name cannot have");
    }
    if let Some(port) = port {
        if port.parse::<u16>().is_err() {
            return invalid("the port is not a number from 0 to 65535");
        }
    }
    Ok(format!("{scheme}://{}", rest.to_ascii_lowercase()))
}

/// In a flag or variable a comma-separated list; in the file a list of
/// strings (`cors_allow_origin = ["https://a.example"]`) or one string.
impl SettingValue for AllowedOrigins {
    fn parse(text: &str) -> Result<Self, String> {
        Self::parse_list(text)
    }

    fn deserialize<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            One(String),
            Many(Vec<String>),
        }
        let written = Written::deserialize(deserializer)?;
        match written {
            Written::One(text) => Self::parse_list(&text),
            Written::Many(entries) => {
                let entries: Vec<&str> = entries.iter().map(|entry| entry.trim()).collect();
                Self::from_entries(&entries)
            }
        }
        .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_list_of_origins_or_any() {
        assert_eq!(
            AllowedOrigins::parse_list("https://App.example.com, http://localhost:5173,http://[::1]:8080")
                .unwrap(),
            AllowedOrigins::List(vec![
                "https://app.example.com".into(),
                "http://localhost:5173".into(),
                "http://[::1]:8080".into(),
            ])
        );
        assert_eq!(AllowedOrigins::parse_list(" * ").unwrap(), AllowedOrigins::Any);
        let list = AllowedOrigins::parse_list("https://a.example").unwrap();
        assert!(list.allows("https://a.example"));
        assert!(list.allows("HTTPS://A.EXAMPLE"));
        assert!(!list.allows("https://a.example:8443"));
        assert!(!list.allows("https://evil.example"));
        assert!(AllowedOrigins::Any.allows("https://anything.example"));
    }

    #[test]
    fn refuses_what_is_not_an_origin() {
        for (text, why) in [
            ("", "no origin given"),
            ("a.example", "no scheme"),
            ("ftp://a.example", "neither http nor https"),
            ("https://a.example/", "no path"),
            ("https://a.example/inbox", "no path"),
            ("https://user@a.example", "no user name"),
            ("https://a.example:99999", "port"),
            ("https://a example", "characters"),
            ("https://", "no host"),
            ("*, https://a.example", "alone"),
        ] {
            let error = AllowedOrigins::parse_list(text).unwrap_err();
            assert!(error.contains(why), "{text:?}: {error}");
        }
    }

    #[test]
    fn the_file_takes_a_list_or_a_string() {
        #[derive(Deserialize)]
        struct Table {
            #[serde(deserialize_with = "crate::config::settings::deserialize")]
            origins: Option<AllowedOrigins>,
        }
        let table: Table = toml::from_str(r#"origins = ["https://a.example", "https://b.example"]"#).unwrap();
        assert_eq!(
            table.origins,
            Some(AllowedOrigins::List(vec![
                "https://a.example".into(),
                "https://b.example".into()
            ]))
        );
        let table: Table = toml::from_str(r#"origins = "*""#).unwrap();
        assert_eq!(table.origins, Some(AllowedOrigins::Any));
        let error = toml::from_str::<Table>(r#"origins = ["https://a.example/x"]"#)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("no path"), "{error}");
    }
}
