//! Configuration values that may hold secrets: header values and
//! environment entries of configured tools and MCP servers. A value may
//! reference environment variables as `${NAME}`; references are resolved
//! once, at start-up. Resolved values are never printed: their `Debug`
//! shows only the names.

use std::collections::BTreeMap;
use std::fmt;

use reqwest::header::{HeaderName, HeaderValue};

/// Replaces every `${NAME}` in `value` with the environment variable
/// `NAME`. A variable that is not set (or not valid UTF-8) is an error that
/// names it, never its value.
pub(crate) fn expand_env(value: &str) -> Result<String, String> {
    expand_with(value, |name| std::env::var(name).ok())
}

fn expand_with(value: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("an unclosed ${ (write ${NAME} to use the environment variable NAME)".into());
        };
        let name = &after[..end];
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("${{{name}}} is not an environment variable reference"));
        }
        match lookup(name) {
            Some(found) => out.push_str(&found),
            None => return Err(format!("the environment variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Names and resolved values (headers, environment entries) that may hold
/// secrets. `Debug` prints the names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretMap(BTreeMap<String, String>);

impl SecretMap {
    /// Resolves the `${NAME}` references of every value; `what` names the
    /// map in errors (e.g. `headers`).
    pub fn resolve(raw: &BTreeMap<String, String>, what: &str) -> Result<Self, String> {
        raw.iter()
            .map(|(key, value)| {
                expand_env(value)
                    .map(|resolved| (key.clone(), resolved))
                    .map_err(|reason| format!("{what}.{key}: {reason}"))
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &String)> {
        self.0.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries as HTTP headers (collected into a `HeaderMap`, or any
    /// collection of pairs), each value marked sensitive. Errors name the
    /// header, never its value.
    pub fn to_headers<C: FromIterator<(HeaderName, HeaderValue)>>(&self) -> Result<C, String> {
        self.0
            .iter()
            .map(|(name, value)| {
                let header_name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("headers: {name:?} is not a valid header name"))?;
                let mut header_value = HeaderValue::from_str(value)
                    .map_err(|_| format!("headers.{name}: the value is not a valid header value"))?;
                header_value.set_sensitive(true);
                Ok((header_name, header_value))
            })
            .collect()
    }
}

impl fmt::Debug for SecretMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, "<redacted>")))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderMap;

    fn expand(value: &str) -> Result<String, String> {
        expand_with(value, |name| (name == "TOKEN").then(|| "s3cr3t".to_owned()))
    }

    #[test]
    fn references_are_replaced() {
        assert_eq!(expand("Bearer ${TOKEN}").unwrap(), "Bearer s3cr3t");
        assert_eq!(expand("${TOKEN}:${TOKEN}").unwrap(), "s3cr3t:s3cr3t");
        assert_eq!(expand("no references").unwrap(), "no references");
        assert_eq!(expand("a $ sign").unwrap(), "a $ sign");
    }

    #[test]
    fn missing_or_malformed_references_are_errors() {
        assert!(expand("${MISSING}").unwrap_err().contains("MISSING is not set"));
        assert!(expand("${TOKEN").unwrap_err().contains("unclosed"));
        assert!(expand("${A B}").is_err());
        assert!(expand("${}").is_err());
    }

    #[test]
    fn headers_are_sensitive_and_errors_name_only_the_header() {
        let map = SecretMap(BTreeMap::from([("X-Token".to_owned(), "s3cr3t".to_owned())]));
        let headers: HeaderMap = map.to_headers().unwrap();
        assert_eq!(headers.len(), 1);
        assert!(headers["x-token"].is_sensitive());
        assert_eq!(headers["x-token"], "s3cr3t");

        let bad_name = SecretMap(BTreeMap::from([("a b".to_owned(), "s3cr3t".to_owned())]));
        let error = bad_name.to_headers::<HeaderMap>().unwrap_err();
        assert_eq!(error, "headers: \"a b\" is not a valid header name");
        let bad_value = SecretMap(BTreeMap::from([("X-Token".to_owned(), "s3\ncr3t".to_owned())]));
        let error = bad_value.to_headers::<HeaderMap>().unwrap_err();
        assert_eq!(error, "headers.X-Token: the value is not a valid header value");
    }

    #[test]
    fn debug_shows_names_only() {
        let map = SecretMap(BTreeMap::from([(
            "Authorization".to_owned(),
            "Bearer s3cr3t".to_owned(),
        )]));
        let printed = format!("{map:?}");
        assert!(printed.contains("Authorization"), "{printed}");
        assert!(!printed.contains("s3cr3t"), "{printed}");
    }
}
