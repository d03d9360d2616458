//! The API keys a server accepts, each belonging to one tenant. Lookups
//! compare the presented key with every configured key in constant time
//! (per key length), so the time taken does not tell how much of a key was
//! right. No key is ever formatted: `Debug` lists tenants and counts only.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use subtle::ConstantTimeEq;

use crate::domain::Tenant;

/// Keys shorter than this are accepted, with a warning at startup.
pub const MIN_RECOMMENDED_KEY_LEN: usize = 16;

/// One accepted key.
struct Entry {
    key: Box<[u8]>,
    tenant: Tenant,
}

/// The accepted API keys. Empty means the server is open.
#[derive(Default)]
pub struct ApiKeys {
    entries: Vec<Entry>,
}

/// Why a key cannot be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum KeyRejected {
    /// Empty, or with characters an HTTP header cannot carry.
    Malformed,
    /// Already a key of this (other) tenant.
    Taken(Tenant),
}

/// Whether `key` can travel in `authorization: Bearer <key>`: visible ASCII
/// without spaces.
fn well_formed(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|b| b.is_ascii_graphic())
}

impl ApiKeys {
    /// Adds `key` for `tenant`; the same key again for the same tenant is
    /// accepted once.
    pub(super) fn add(&mut self, tenant: &Tenant, key: &str) -> Result<(), KeyRejected> {
        if !well_formed(key) {
            return Err(KeyRejected::Malformed);
        }
        if let Some(owner) = self.authenticate(key.as_bytes()) {
            return if owner == *tenant {
                Ok(())
            } else {
                Err(KeyRejected::Taken(owner))
            };
        }
        self.entries.push(Entry {
            key: key.as_bytes().into(),
            tenant: tenant.clone(),
        });
        Ok(())
    }

    /// No keys: every caller is let in as the default tenant.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tenant whose key `presented` is, if any. Every configured key is
    /// compared, whatever matched before.
    pub fn authenticate(&self, presented: &[u8]) -> Option<Tenant> {
        let mut found = None;
        for entry in &self.entries {
            if bool::from(entry.key.as_ref().ct_eq(presented)) {
                found = Some(&entry.tenant);
            }
        }
        found.cloned()
    }

    /// The number of keys of each tenant.
    pub fn tenants(&self) -> BTreeMap<Tenant, usize> {
        let mut tenants = BTreeMap::new();
        for entry in &self.entries {
            *tenants.entry(entry.tenant.clone()).or_insert(0) += 1;
        }
        tenants
    }

    /// Tenants with a key shorter than [`MIN_RECOMMENDED_KEY_LEN`], each
    /// once, in order.
    pub fn tenants_with_short_keys(&self) -> Vec<Tenant> {
        let short: BTreeSet<&Tenant> = self
            .entries
            .iter()
            .filter(|entry| entry.key.len() < MIN_RECOMMENDED_KEY_LEN)
            .map(|entry| &entry.tenant)
            .collect();
        short.into_iter().cloned().collect()
    }
}

impl fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tenants: BTreeMap<String, usize> = self
            .tenants()
            .into_iter()
            .map(|(tenant, count)| (tenant.to_string(), count))
            .collect();
        f.debug_struct("ApiKeys")
            .field("keys_by_tenant", &tenants)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(id: &str) -> Tenant {
        Tenant::new(id).unwrap()
    }

    #[test]
    fn finds_the_tenant_of_a_key() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("acme"), "acme-key-0123456789").unwrap();
        keys.add(&tenant("globex"), "globex-key-0123456789").unwrap();
        assert_eq!(keys.authenticate(b"acme-key-0123456789"), Some(tenant("acme")));
        assert_eq!(
            keys.authenticate(b"globex-key-0123456789"),
            Some(tenant("globex"))
        );
        assert_eq!(keys.authenticate(b"acme-key-012345678"), None);
        assert_eq!(keys.authenticate(b""), None);
    }

    #[test]
    fn a_key_belongs_to_one_tenant() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("acme"), "shared-key-0123456789").unwrap();
        keys.add(&tenant("acme"), "shared-key-0123456789").unwrap();
        assert_eq!(
            keys.add(&tenant("globex"), "shared-key-0123456789"),
            Err(KeyRejected::Taken(tenant("acme")))
        );
        assert_eq!(
            keys.add(&tenant("acme"), "has space"),
            Err(KeyRejected::Malformed)
        );
        assert_eq!(keys.add(&tenant("acme"), ""), Err(KeyRejected::Malformed));
    }

    #[test]
    fn debug_never_shows_a_key() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("acme"), "very-secret-value-42").unwrap();
        let shown = format!("{keys:?}");
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("acme"), "{shown}");
        assert_eq!(keys.tenants_with_short_keys(), Vec::<Tenant>::new());
    }

    #[test]
    fn each_tenant_with_short_keys_is_named_once() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("globex"), "short-1").unwrap();
        keys.add(&tenant("acme"), "short-2").unwrap();
        keys.add(&tenant("globex"), "short-3").unwrap();
        keys.add(&tenant("initech"), "long-enough-key-0123456789")
            .unwrap();
        assert_eq!(
            keys.tenants_with_short_keys(),
            vec![tenant("acme"), tenant("globex")]
        );
    }
}
