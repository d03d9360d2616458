//! Where API keys come from: `[[tenants]]` in `agentd.toml` (each naming
//! an environment variable and/or a file holding its keys) and a keys file
//! of `tenant:key` lines (`[auth] api_keys_file`, `--api-keys-file`,
//! `AGENTD_API_KEYS_FILE`, declared in `config/server.rs` with the rest of
//! `[auth]`). Loading reads them once, at startup. Errors
//! name the tenant, variable, file and line, never the key.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::keys::{ApiKeys, KeyRejected};
use crate::domain::{InvalidTenant, Tenant};

/// `[[tenants]]`: a tenant and where its API keys are.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    pub id: String,
    /// An environment variable holding the tenant's keys, separated by
    /// commas or whitespace.
    #[serde(default)]
    pub api_keys_env: Option<String>,
    /// A file holding the tenant's keys, one a line (`#` starts a comment),
    /// each optionally followed by its name (`<key> <name>`).
    #[serde(default)]
    pub api_keys_file: Option<PathBuf>,
    /// The name of the keys from `api_keys_env` (who decided what a call
    /// with one of them decided); unset: each is named `sha256:` and the
    /// first 8 hex digits of its SHA-256.
    #[serde(default)]
    pub api_key_name: Option<String>,
}

/// A key source that cannot be used. Never holds a key.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    #[error("tenants: {0}")]
    InvalidTenant(#[from] InvalidTenant),
    #[error("tenants: {0:?} is listed twice")]
    DuplicateTenant(String),
    #[error("tenant {tenant:?}: give api_keys_env or api_keys_file")]
    NoKeySource { tenant: String },
    #[error("tenant {tenant:?}: the environment variable {var} is not set")]
    EnvUnset { tenant: String, var: String },
    #[error("tenant {tenant:?}: {origin} holds no API key")]
    NoKeys { tenant: String, origin: String },
    #[error("reading {path}: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{origin}: {reason}")]
    Malformed { origin: String, reason: String },
    #[error("{origin}: a key of tenant {tenant:?} is already a key of tenant {owner:?}")]
    SharedKey {
        origin: String,
        tenant: String,
        owner: String,
    },
}

impl ApiKeys {
    /// Loads every key the configuration names, reading the process
    /// environment.
    pub fn load(tenants: &[TenantConfig], keys_file: Option<&Path>) -> Result<Self, AuthConfigError> {
        Self::load_with_env(tenants, keys_file, |var| std::env::var(var).ok())
    }

    /// [`ApiKeys::load`] with the environment given as a lookup.
    pub fn load_with_env(
        tenants: &[TenantConfig],
        keys_file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, AuthConfigError> {
        let mut keys = ApiKeys::default();
        let mut seen = BTreeSet::new();
        for config in tenants {
            let tenant = Tenant::new(&config.id)?;
            if !seen.insert(tenant.clone()) {
                return Err(AuthConfigError::DuplicateTenant(config.id.clone()));
            }
            if config.api_keys_env.is_none() && config.api_keys_file.is_none() {
                return Err(AuthConfigError::NoKeySource {
                    tenant: config.id.clone(),
                });
            }
            if let Some(var) = &config.api_keys_env {
                let value = env(var).ok_or_else(|| AuthConfigError::EnvUnset {
                    tenant: config.id.clone(),
                    var: var.clone(),
                })?;
                let source = format!("environment variable {var}");
                let name = match &config.api_key_name {
                    Some(name) => Some(named(&format!("tenant {:?}: api_key_name", config.id), name)?),
                    None => None,
                };
                let found = value
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|k| !k.is_empty())
                    .map(|key| (key, name));
                add_all(&mut keys, &tenant, &source, found)?;
            }
            if let Some(path) = &config.api_keys_file {
                let text = read(path)?;
                let source = path.display().to_string();
                let mut found = Vec::new();
                for (number, line) in meaningful_lines(&text) {
                    let origin = format!("{} line {number}", path.display());
                    found.push(key_and_name(&origin, line)?);
                }
                add_all(&mut keys, &tenant, &source, found.into_iter())?;
            }
        }
        if let Some(path) = keys_file {
            let text = read(path)?;
            for (number, line) in meaningful_lines(&text) {
                let source = format!("{} line {number}", path.display());
                let (tenant, key) = line.split_once(':').ok_or_else(|| AuthConfigError::Malformed {
                    origin: source.clone(),
                    reason: "expected tenant:key".into(),
                })?;
                let tenant = Tenant::new(tenant.trim()).map_err(|error| AuthConfigError::Malformed {
                    origin: source.clone(),
                    reason: error.to_string(),
                })?;
                let (key, name) = key_and_name(&source, key.trim())?;
                add(&mut keys, &tenant, &source, key, name)?;
            }
        }
        Ok(keys)
    }
}

fn read(path: &Path) -> Result<String, AuthConfigError> {
    std::fs::read_to_string(path).map_err(|error| AuthConfigError::Read {
        path: path.to_owned(),
        error,
    })
}

/// Non-empty lines without `#` comments, numbered from 1.
fn meaningful_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(index, line)| {
        let line = line.split_once('#').map_or(line, |(before, _)| before).trim();
        (!line.is_empty()).then_some((index + 1, line))
    })
}

/// A key, and the name that follows it on its line (after whitespace), if
/// any.
fn key_and_name<'a>(origin: &str, line: &'a str) -> Result<(&'a str, Option<&'a str>), AuthConfigError> {
    match line.split_once(char::is_whitespace) {
        None => Ok((line, None)),
        Some((key, name)) => Ok((key, Some(named(origin, name.trim())?))),
    }
}

/// `name`, if a key may have it.
fn named<'a>(origin: &str, name: &'a str) -> Result<&'a str, AuthConfigError> {
    super::keys::check_key_name(name).map_err(|reason| AuthConfigError::Malformed {
        origin: origin.to_owned(),
        reason,
    })?;
    Ok(name)
}

fn add_all<'a>(
    keys: &mut ApiKeys,
    tenant: &Tenant,
    source: &str,
    found: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<(), AuthConfigError> {
    let mut any = false;
    for (key, name) in found {
        add(keys, tenant, source, key, name)?;
        any = true;
    }
    if !any {
        return Err(AuthConfigError::NoKeys {
            tenant: tenant.to_string(),
            origin: source.to_owned(),
        });
    }
    Ok(())
}

fn add(
    keys: &mut ApiKeys,
    tenant: &Tenant,
    source: &str,
    key: &str,
    name: Option<&str>,
) -> Result<(), AuthConfigError> {
    keys.add(tenant, key, name).map_err(|rejected| match rejected {
        KeyRejected::Malformed => AuthConfigError::Malformed {
            origin: source.to_owned(),
            reason: format!(
                "a key of tenant {tenant:?} is empty or holds characters other than visible ASCII"
            ),
        },
        KeyRejected::Taken(owner) => AuthConfigError::SharedKey {
            origin: source.to_owned(),
            tenant: tenant.to_string(),
            owner: owner.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant(id: &str) -> Tenant {
        Tenant::new(id).unwrap()
    }

    #[test]
    fn keys_from_environment_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("acme.keys");
        std::fs::write(&own, "# acme's keys\nacme-file-key-000001\n\n").unwrap();
        let shared = dir.path().join("all.keys");
        std::fs::write(
            &shared,
            "globex: globex-key-0000001  # rotated in May\ninitech:initech-key-000001\n",
        )
        .unwrap();
        let tenants = vec![TenantConfig {
            id: "acme".into(),
            api_keys_env: Some("ACME_KEYS".into()),
            api_keys_file: Some(own),
            api_key_name: None,
        }];
        let env =
            |var: &str| (var == "ACME_KEYS").then(|| "acme-env-key-000001, acme-env-key-000002".to_owned());
        let keys = ApiKeys::load_with_env(&tenants, Some(&shared), env).unwrap();
        for (key, owner) in [
            ("acme-env-key-000001", "acme"),
            ("acme-env-key-000002", "acme"),
            ("acme-file-key-000001", "acme"),
            ("globex-key-0000001", "globex"),
            ("initech-key-000001", "initech"),
        ] {
            assert_eq!(keys.authenticate(key.as_bytes()), Some(tenant(owner)), "{key}");
        }
        assert_eq!(keys.tenants().get(&tenant("acme")), Some(&3));
    }

    #[test]
    fn keys_take_their_names_from_each_source() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("acme.keys");
        std::fs::write(
            &own,
            "acme-file-key-000001 Ada Lovelace  # on call
acme-file-key-000002
",
        )
        .unwrap();
        let shared = dir.path().join("all.keys");
        std::fs::write(
            &shared,
            "globex:globex-key-0000001 billing-service
",
        )
        .unwrap();
        let tenants = vec![TenantConfig {
            id: "acme".into(),
            api_keys_env: Some("ACME_KEYS".into()),
            api_keys_file: Some(own),
            api_key_name: Some("deploy-bot".into()),
        }];
        let env = |_: &str| Some("acme-env-key-000001".to_owned());
        let keys = ApiKeys::load_with_env(&tenants, Some(&shared), env).unwrap();
        let name = |key: &str| keys.identify(key.as_bytes()).unwrap().name;
        assert_eq!(name("acme-env-key-000001"), "deploy-bot");
        assert_eq!(name("acme-file-key-000001"), "Ada Lovelace");
        assert_eq!(
            name("acme-file-key-000002"),
            super::super::keys::unnamed_key_name("acme-file-key-000002")
        );
        assert_eq!(name("globex-key-0000001"), "billing-service");

        let bad = vec![TenantConfig {
            api_key_name: Some(String::new()),
            ..tenants[0].clone()
        }];
        let shown = ApiKeys::load_with_env(&bad, None, env).unwrap_err().to_string();
        assert!(shown.contains("api_key_name"), "{shown}");
    }

    #[test]
    fn errors_name_the_source_but_never_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("all.keys");
        std::fs::write(&file, "acme:secret-one-000001\nglobex:secret-one-000001\n").unwrap();
        let error = ApiKeys::load_with_env(&[], Some(&file), |_| None).unwrap_err();
        let shown = error.to_string();
        assert!(shown.contains("line 2") && shown.contains("acme"), "{shown}");
        assert!(!shown.contains("secret-one"), "{shown}");

        std::fs::write(&file, "no-colon-secret\n").unwrap();
        let shown = ApiKeys::load_with_env(&[], Some(&file), |_| None)
            .unwrap_err()
            .to_string();
        assert!(
            shown.contains("expected tenant:key") && !shown.contains("no-colon-secret"),
            "{shown}"
        );

        let unset = vec![TenantConfig {
            id: "acme".into(),
            api_keys_env: Some("NOPE".into()),
            api_keys_file: None,
            api_key_name: None,
        }];
        assert!(matches!(
            ApiKeys::load_with_env(&unset, None, |_| None),
            Err(AuthConfigError::EnvUnset { .. })
        ));
        let empty = |_: &str| Some(" , ".to_owned());
        assert!(matches!(
            ApiKeys::load_with_env(&unset, None, empty),
            Err(AuthConfigError::NoKeys { .. })
        ));
        let sourceless = vec![TenantConfig {
            id: "acme".into(),
            api_keys_env: None,
            api_keys_file: None,
            api_key_name: None,
        }];
        assert!(matches!(
            ApiKeys::load_with_env(&sourceless, None, |_| None),
            Err(AuthConfigError::NoKeySource { .. })
        ));
    }
}
