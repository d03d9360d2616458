//! URLs and connection strings as they may be printed: the password of
//! `scheme://user:password@host` and the values of secret-looking
//! parameters (`?password=…`, `&token=…`, libpq's `password=…` key-value
//! form) replaced by `***`, everything else kept so that an operator can
//! still tell which server a line is about.
//!
//! Written here rather than with the `url` crate: libpq accepts what no URL
//! parser does (several hosts, `host1:5432,host2:5433`, and the key-value
//! form `host=db password=…`), and redaction must never fail on a string it
//! cannot parse.

use std::borrow::Cow;
use std::fmt;

/// What replaces a secret.
const HIDDEN: &str = "***";

/// Parameter names whose values are secrets: compared without case, on
/// the whole name or as its last `_`/`-` part (`api_key`, `x-api-key`).
const SECRET_NAMES: [&str; 10] = [
    "password",
    "passwd",
    "pwd",
    "sslpassword",
    "secret",
    "token",
    "key",
    "apikey",
    "signature",
    "sig",
];

/// `text` with its credentials hidden, for printing; see the module's
/// documentation. Displays as the redacted text.
#[derive(Clone, Copy)]
pub struct Redacted<'a>(pub &'a str);

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(self.0))
    }
}

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*redact(self.0), f)
    }
}

/// `text` with its credentials hidden: borrowed when it has none.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Some(hidden) = hide_password(&out) {
        out = Cow::Owned(hidden);
    }
    if let Some(hidden) = hide_parameters(&out) {
        out = Cow::Owned(hidden);
    }
    out
}

/// The passwords of the URLs' user information (`user:password@`) in
/// `text`, hidden.
fn hide_password(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let authority_len = text[start..]
            .find(['/', '?', '#', ' ', '\t', '\n', ')', '"', '\''])
            .unwrap_or(text.len() - start);
        let authority = &text[start..start + authority_len];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':').filter(|colon| colon + 1 < at) {
                out.push_str(&text[copied..start + colon + 1]);
                out.push_str(HIDDEN);
                copied = start + at;
            }
        }
        from = start + authority_len;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// The values of secret-named parameters hidden: in a query
/// (`?a=1&password=…`) and in libpq's key-value form (`password=… host=…`,
/// a value possibly in single quotes).
fn hide_parameters(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let name_start = rest[..eq]
            .rfind(['?', '&', ';', ' ', '\t', '\n'])
            .map_or(0, |at| at + 1);
        let name = &rest[name_start..eq];
        let value_start = eq + 1;
        let value_len = value_length(&rest[value_start..]);
        out.push_str(&rest[..value_start]);
        if is_secret(name) && value_len > 0 {
            out.push_str(HIDDEN);
            changed = true;
        } else {
            out.push_str(&rest[value_start..value_start + value_len]);
        }
        rest = &rest[value_start + value_len..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// The length of a parameter's value at the start of `text`: up to the next
/// separator, or a whole single-quoted value (libpq's `'…'`, `\'` inside).
fn value_length(text: &str) -> usize {
    if let Some(quoted) = text.strip_prefix('\'') {
        let mut escaped = false;
        for (at, c) in quoted.char_indices() {
            match c {
                '\\' if !escaped => escaped = true,
                '\'' if !escaped => return at + 2,
                _ => escaped = false,
            }
        }
        return text.len();
    }
    text.find(['&', ';', ' ', '\t', '\n', '#']).unwrap_or(text.len())
}

fn is_secret(name: &str) -> bool {
    let name = name.trim();
    let last = name.rsplit(['_', '-']).next().unwrap_or(name);
    SECRET_NAMES
        .iter()
        .any(|secret| name.eq_ignore_ascii_case(secret) || last.eq_ignore_ascii_case(secret))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_secret_parameters_are_hidden() {
        for (text, shown) in [
            (
                "postgres://agentd:s3cret@db.internal:5432/agentd",
                "postgres://agentd:***@db.internal:5432/agentd",
            ),
            (
                "postgresql://u:p%40ss@h1:5432,h2:5433/db?sslmode=require",
                "postgresql://u:***@h1:5432,h2:5433/db?sslmode=require",
            ),
            (
                "postgres://u@h/db?password=s3cret&application_name=agentd",
                "postgres://u@h/db?password=***&application_name=agentd",
            ),
            (
                r"host=db user=agentd password='it\'s s3cret' dbname=agentd",
                "host=db user=agentd password=*** dbname=agentd",
            ),
            (
                "https://mcp.example/mcp?api_key=abc123",
                "https://mcp.example/mcp?api_key=***",
            ),
            ("https://t:x@h.example/a?b=c#d", "https://t:***@h.example/a?b=c#d"),
            (
                "cannot reach https://a:b@h.example/mcp: error sending request for url (https://a:b@h.example/mcp)",
                "cannot reach https://a:***@h.example/mcp: error sending request for url (https://a:***@h.example/mcp)",
            ),
        ] {
            assert_eq!(redact(text), shown, "{text}");
        }
    }

    #[test]
    fn what_has_no_credentials_is_unchanged() {
        for text in [
            "sqlite:///var/lib/agentd/agentd.sqlite3?synchronous=normal",
            "memory:",
            "postgres://agentd@127.0.0.1:5432/test",
            "https://user@example.com/path?q=1",
            "not a url at all",
            "postgres://u:@h/db",
            "",
        ] {
            assert!(matches!(redact(text), Cow::Borrowed(_)), "{text}");
        }
        assert_eq!(
            format!("{}", Redacted("postgres://a:b@h/d")),
            "postgres://a:***@h/d"
        );
        assert_eq!(
            format!("{:?}", Redacted("postgres://a:b@h/d")),
            "\"postgres://a:***@h/d\""
        );
    }
}
