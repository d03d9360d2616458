//! Which `Host` a browser's request may name, and which `Origin` it may
//! come from. A page whose host name an attacker makes resolve to this
//! server (DNS rebinding) is same-origin with its own name, so its
//! requests name that name in `Host`: only the names the operator allows
//! are answered (`[server] allowed_hosts`: loopback and the host of
//! `public_url` by default). A page of another origin sends its origin in
//! `Origin`: only this server's own (as the request names it, or
//! `public_url`) and those of `cors_allow_origin` are answered.

use axum::http::uri::Authority;

use crate::config::{AllowedOrigins, PublicUrl};

/// The loopback names, allowed when no list is configured.
pub(super) const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The `Host` names requests may name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllowedHosts {
    /// `*`: any.
    Any,
    /// These hosts, each with a port (only that one) or without (any).
    List(Vec<(String, Option<u16>)>),
}

impl AllowedHosts {
    /// A comma-separated list of `host` or `host:port` entries, or `*`.
    pub fn parse(text: &str) -> Self {
        let entries: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .collect();
        if entries == ["*"] {
            return Self::Any;
        }
        Self::List(entries.into_iter().map(entry).collect())
    }

    /// What the settings allow: the list they give, else the loopback
    /// names and the host of `public_url`.
    pub fn configured(written: Option<&str>, public_url: Option<&PublicUrl>) -> Self {
        if let Some(written) = written {
            return Self::parse(written);
        }
        let mut hosts: Vec<(String, Option<u16>)> = LOOPBACK.into_iter().map(entry).collect();
        if let Some(url) = public_url {
            hosts.push((entry(url.authority()).0, None));
        }
        Self::List(hosts)
    }

    /// Whether a request naming `host` (a `Host` header's value, or a URI's
    /// authority) may be answered.
    pub fn allows(&self, host: &str) -> bool {
        let Self::List(hosts) = self else {
            return true;
        };
        let Ok(authority) = host.parse::<Authority>() else {
            return false;
        };
        let name = normalize(authority.host());
        hosts.iter().any(|(allowed, port)| {
            *allowed == name && port.is_none_or(|port| authority.port_u16() == Some(port))
        })
    }
}

/// One entry of the list: its host, lowercase and without brackets or a
/// final dot, and its port if it names one.
fn entry(text: &str) -> (String, Option<u16>) {
    match text.parse::<Authority>() {
        Ok(authority) => (normalize(authority.host()), authority.port_u16()),
        Err(_) => (normalize(text), None),
    }
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Whether a page of `origin` may call: one this server served (the
/// origin names the host the request names, which the door allowed, or
/// `public_url`), or one of `cors`.
pub(super) fn origin_allowed(
    origin: &str,
    host: Option<&str>,
    public_url: Option<&PublicUrl>,
    cors: Option<&AllowedOrigins>,
) -> bool {
    let authority = origin.split_once("://").map(|(_, authority)| authority);
    let same_origin =
        authority.is_some_and(|authority| host.is_some_and(|host| host.eq_ignore_ascii_case(authority)));
    same_origin
        || public_url.is_some_and(|url| url.origin().eq_ignore_ascii_case(origin))
        || cors.is_some_and(|cors| cors.allows(origin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_the_public_host_by_default() {
        let public = PublicUrl::parse("https://agents.example.com/agentd").unwrap();
        let hosts = AllowedHosts::configured(None, Some(&public));
        for host in [
            "localhost",
            "127.0.0.1:50051",
            "[::1]:8080",
            "LOCALHOST.",
            "agents.example.com",
        ] {
            assert!(hosts.allows(host), "{host}");
        }
        for host in [
            "attacker.example:50051",
            "127.0.0.2",
            "agents.example.com.evil",
            "a b",
            "",
        ] {
            assert!(!hosts.allows(host), "{host}");
        }
    }

    #[test]
    fn a_list_with_ports_and_a_star() {
        let hosts = AllowedHosts::configured(Some("a.example, b.example:8443"), None);
        assert!(hosts.allows("a.example:1"));
        assert!(hosts.allows("b.example:8443"));
        assert!(!hosts.allows("b.example"));
        assert!(!hosts.allows("localhost"));
        assert!(AllowedHosts::parse(" * ").allows("anything.example"));
    }

    #[test]
    fn origins_of_this_server_or_allowed_pages_pass() {
        let host = Some("127.0.0.1:5000");
        assert!(origin_allowed("http://127.0.0.1:5000", host, None, None));
        assert!(!origin_allowed("http://evil.example", host, None, None));
        assert!(!origin_allowed("null", host, None, None));
        let public = PublicUrl::parse("https://agents.example.com").unwrap();
        assert!(origin_allowed(
            "https://agents.example.com",
            host,
            Some(&public),
            None
        ));
        let cors = AllowedOrigins::parse_list("https://app.example.com").unwrap();
        assert!(origin_allowed("https://app.example.com", host, None, Some(&cors)));
        assert!(!origin_allowed("https://evil.example", host, None, Some(&cors)));
    }
}
