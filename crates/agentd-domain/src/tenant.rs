//! Tenants: every run belongs to the tenant that started it, and only that
//! tenant sees it. A tenant is a name; an authenticated caller is one (its
//! API key says which), and a server without API keys serves every caller
//! as [`Tenant::DEFAULT`]. This module only names tenants; authentication
//! lives in `auth/`, and the runtime enforces the isolation.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The longest tenant id.
pub const MAX_TENANT_ID_LEN: usize = 64;

/// A tenant's id: 1 to 64 characters from `[A-Za-z0-9_.-]`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tenant(Arc<str>);

/// A tenant id that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid tenant id {id:?}: use 1 to {MAX_TENANT_ID_LEN} characters from A-Z, a-z, 0-9, '_', '.' and '-'"
)]
pub struct InvalidTenant {
    pub id: String,
}

impl Tenant {
    /// The tenant of every caller of a server that has no API keys, and of
    /// the runs stored before tenants existed.
    pub const DEFAULT: &'static str = "default";

    /// A tenant from its id, checked.
    pub fn new(id: &str) -> Result<Self, InvalidTenant> {
        let valid = !id.is_empty()
            && id.len() <= MAX_TENANT_ID_LEN
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if valid {
            Ok(Self(Arc::from(id)))
        } else {
            Err(InvalidTenant { id: id.to_owned() })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Tenant {
    fn default() -> Self {
        Self(Arc::from(Self::DEFAULT))
    }
}

impl fmt::Display for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Tenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tenant({:?})", &*self.0)
    }
}

impl Serialize for Tenant {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Tenant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        Tenant::new(&id).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked() {
        assert_eq!(Tenant::new("acme-1.eu_west").unwrap().as_str(), "acme-1.eu_west");
        assert_eq!(Tenant::default().as_str(), "default");
        for bad in ["", "a b", "ä", "x:y", &"x".repeat(65)] {
            assert!(Tenant::new(bad).is_err(), "{bad:?}");
        }
        assert!(Tenant::new(&"x".repeat(64)).is_ok());
    }

    #[test]
    fn serializes_as_a_string() {
        let tenant = Tenant::new("acme").unwrap();
        assert_eq!(serde_json::to_string(&tenant).unwrap(), "\"acme\"");
        let back: Tenant = serde_json::from_str("\"acme\"").unwrap();
        assert_eq!(back, tenant);
        assert!(serde_json::from_str::<Tenant>("\"a b\"").is_err());
    }
}
