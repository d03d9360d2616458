//! The API keys a server accepts, each belonging to one tenant. Lookups
//! compare the presented key with every configured key in constant time
//! (per key length), so the time taken does not tell how much of a key was
//! right. No key is ever formatted: `Debug` lists tenants and counts only.
//! Each key has a name, which says who decided what a call with it decided
//! (`Decision.decided_by`): the name the configuration gives it, or
//! `sha256:` and the first 8 hex digits of the key's SHA-256.

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
    name: String,
}

/// Who a key says the caller is: its tenant, and the key's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    pub tenant: Tenant,
    pub name: String,
}

/// Longest key name.
pub const MAX_KEY_NAME_CHARS: usize = 128;

/// The name of a key the configuration names not: `sha256:` and the first
/// 8 hex digits of its SHA-256 (which tells keys apart without telling
/// anything of the key).
pub fn unnamed_key_name(key: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(key.as_bytes());
    let hex: String = digest[..4].iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256:{hex}")
}

/// Why a key's name cannot be used, if it cannot: 1 to
/// [`MAX_KEY_NAME_CHARS`] characters, none of them a control character.
pub(super) fn check_key_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > MAX_KEY_NAME_CHARS {
        return Err(format!("a key's name has 1 to {MAX_KEY_NAME_CHARS} characters"));
    }
    if name.chars().any(char::is_control) {
        return Err("a key's name holds no control characters".into());
    }
    Ok(())
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
    /// Adds `key` for `tenant`, named `name` (`None`: see
    /// [`unnamed_key_name`]); the same key again for the same tenant is
    /// accepted once (the first name stays).
    pub(super) fn add(&mut self, tenant: &Tenant, key: &str, name: Option<&str>) -> Result<(), KeyRejected> {
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
            name: name.map_or_else(|| unnamed_key_name(key), str::to_owned),
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
        self.identify(presented).map(|credential| credential.tenant)
    }

    /// The tenant and name of key `presented`, if it is one. Every
    /// configured key is compared, whatever matched before.
    pub fn identify(&self, presented: &[u8]) -> Option<Credential> {
        let mut found = None;
        for entry in &self.entries {
            if bool::from(entry.key.as_ref().ct_eq(presented)) {
                found = Some(entry);
            }
        }
        found.map(|entry| Credential {
            tenant: entry.tenant.clone(),
            name: entry.name.clone(),
        })
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
        keys.add(&tenant("acme"), "acme-key-0123456789", None).unwrap();
        keys.add(&tenant("globex"), "globex-key-0123456789", None)
            .unwrap();
        assert_eq!(keys.authenticate(b"acme-key-0123456789"), Some(tenant("acme")));
        assert_eq!(
            keys.authenticate(b"globex-key-0123456789"),
            Some(tenant("globex"))
        );
        assert_eq!(keys.authenticate(b"acme-key-012345678"), None);
        assert_eq!(keys.authenticate(b""), None);
    }

    #[test]
    fn a_key_is_named_as_configured_or_by_its_hash() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("acme"), "acme-key-0123456789", Some("deploy-bot"))
            .unwrap();
        keys.add(&tenant("acme"), "acme-key-9876543210", None).unwrap();
        let named = keys.identify(b"acme-key-0123456789").unwrap();
        assert_eq!(named.name, "deploy-bot");
        let unnamed = keys.identify(b"acme-key-9876543210").unwrap();
        assert_eq!(unnamed.name, unnamed_key_name("acme-key-9876543210"));
        assert!(unnamed.name.starts_with("sha256:") && unnamed.name.len() == 15);
        assert!(!unnamed.name.contains("acme-key"));
        assert_eq!(unnamed_key_name("abc"), "sha256:ba7816bf");
        assert!(check_key_name("").is_err() && check_key_name("a\tb").is_err());
        assert!(check_key_name("Ada Lovelace").is_ok());
    }

    #[test]
    fn a_key_belongs_to_one_tenant() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("acme"), "shared-key-0123456789", None).unwrap();
        keys.add(&tenant("acme"), "shared-key-0123456789", None).unwrap();
        assert_eq!(
            keys.add(&tenant("globex"), "shared-key-0123456789", None),
            Err(KeyRejected::Taken(tenant("acme")))
        );
        assert_eq!(
            keys.add(&tenant("acme"), "has space", None),
            Err(KeyRejected::Malformed)
        );
        assert_eq!(keys.add(&tenant("acme"), "", None), Err(KeyRejected::Malformed));
    }

    #[test]
    fn debug_never_shows_a_key() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("acme"), "very-secret-value-42", None).unwrap();
        let shown = format!("{keys:?}");
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("acme"), "{shown}");
        assert_eq!(keys.tenants_with_short_keys(), Vec::<Tenant>::new());
    }

    #[test]
    fn each_tenant_with_short_keys_is_named_once() {
        let mut keys = ApiKeys::default();
        keys.add(&tenant("globex"), "short-1", None).unwrap();
        keys.add(&tenant("acme"), "short-2", None).unwrap();
        keys.add(&tenant("globex"), "short-3", None).unwrap();
        keys.add(&tenant("initech"), "long-enough-key-0123456789", None)
            .unwrap();
        assert_eq!(
            keys.tenants_with_short_keys(),
            vec![tenant("acme"), tenant("globex")]
        );
    }
}
