//! How durable a commit of the SQLite store is: SQLite's `synchronous`
//! setting, chosen with the store URL (`sqlite://PATH?synchronous=normal`).
//!
//! The default, `FULL`, makes every commit reach the disk before it is
//! acknowledged, so a suspension a client has seen survives power loss as
//! well as a crash of the process; group commit pays one fsync for every
//! write waiting. `NORMAL` (in WAL mode) survives a crash of the process
//! but may lose the last commits on power loss or an operating system
//! crash, and fsyncs only at checkpoints. BENCHMARKS.md measures both.

use crate::StoreError;

/// SQLite's `synchronous` for the store's writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Synchronous {
    /// Every commit is on disk before it is acknowledged.
    #[default]
    Full,
    /// Commits survive a crash of the process, not necessarily power loss.
    Normal,
}

impl Synchronous {
    pub fn as_str(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// Splits `PATH?synchronous=full|normal` into the path and the setting
/// (FULL without a query); any other option is an error.
pub(crate) fn parse_location(location: &str) -> Result<(&str, Synchronous), StoreError> {
    let Some((path, query)) = location.split_once('?') else {
        return Ok((location, Synchronous::default()));
    };
    let mut synchronous = Synchronous::default();
    for option in query.split('&').filter(|option| !option.is_empty()) {
        synchronous = match option.split_once('=') {
            Some(("synchronous", value)) if value.eq_ignore_ascii_case("full") => Synchronous::Full,
            Some(("synchronous", value)) if value.eq_ignore_ascii_case("normal") => Synchronous::Normal,
            _ => {
                return Err(StoreError::Backend(format!(
                    "unsupported SQLite store option {option:?}: use synchronous=full or synchronous=normal"
                )))
            }
        };
    }
    Ok((path, synchronous))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_unless_the_url_says_normal() {
        assert_eq!(
            parse_location("data/agentd.sqlite3").unwrap(),
            ("data/agentd.sqlite3", Synchronous::Full)
        );
        assert_eq!(
            parse_location("a.db?synchronous=normal").unwrap(),
            ("a.db", Synchronous::Normal)
        );
        assert_eq!(
            parse_location("a.db?synchronous=FULL").unwrap(),
            ("a.db", Synchronous::Full)
        );
        assert!(parse_location("a.db?synchronous=off").is_err());
        assert!(parse_location("a.db?cache=shared").is_err());
    }
}
