//! The `requestState` of an input-required result (the 2026-07-28
//! generation): which run and call the question is about, sealed with an
//! HMAC key (rmcp's `RequestStateCodec`) and bound to the caller's tenant,
//! so that a client can neither forge nor alter it, nor hand it to another
//! tenant. It is signed, not encrypted: it holds ids only. The run itself
//! stays in the store, suspended, between the two calls.

use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};

use crate::domain::{RunId, Tenant};

/// What the state names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Asked {
    /// The run that waits.
    pub run: RunId,
    /// The pending call the question is about.
    pub call: String,
    /// The run's last seq when it was asked: where a follower picks it up
    /// if the question is answered elsewhere.
    pub seq: u64,
}

/// Seals and opens states with one key.
#[derive(Clone)]
pub(super) struct StateSeal {
    codec: std::sync::Arc<RequestStateCodec>,
}

/// Why a state cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("the key of [server] mcp_state_key must be at least 32 bytes long")]
    ShortKey,
    #[error("requestState is not one this server issued to this caller")]
    Invalid,
}

impl StateSeal {
    /// A seal with `key` (at least 32 bytes), or with a random key of this
    /// process when there is none.
    pub(super) fn new(key: Option<&str>) -> Result<Self, StateError> {
        let key = match key {
            Some(key) => key.as_bytes().to_vec(),
            None => {
                let mut random = uuid::Uuid::new_v4().as_bytes().to_vec();
                random.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
                random
            }
        };
        let codec = RequestStateCodec::try_new(key).map_err(|_| StateError::ShortKey)?;
        Ok(Self {
            codec: std::sync::Arc::new(codec),
        })
    }

    fn context(tenant: &Tenant) -> Vec<u8> {
        format!("agentd/mcp/tenant:{tenant}").into_bytes()
    }

    /// `asked` as an opaque string only `tenant` can open.
    pub(super) fn seal(&self, tenant: &Tenant, asked: &Asked) -> String {
        let context = Self::context(tenant);
        let options = SealOptions::new().associated_data(&context);
        let payload = serde_json::to_vec(asked).expect("ids serialise");
        self.codec.seal_with(&payload, &options)
    }

    /// What `sealed` names, if this server sealed it for `tenant`.
    pub(super) fn open(&self, tenant: &Tenant, sealed: &str) -> Result<Asked, StateError> {
        let payload = self
            .codec
            .open_with(sealed, &Self::context(tenant))
            .map_err(|_| StateError::Invalid)?;
        serde_json::from_slice(&payload).map_err(|_| StateError::Invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_opens_only_for_its_tenant_and_unaltered() {
        let seal = StateSeal::new(None).unwrap();
        let acme = Tenant::new("acme").unwrap();
        let globex = Tenant::new("globex").unwrap();
        let asked = Asked {
            run: RunId::new(),
            call: "call_1".into(),
            seq: 7,
        };
        let sealed = seal.seal(&acme, &asked);
        assert_eq!(seal.open(&acme, &sealed).unwrap(), asked);
        assert!(seal.open(&globex, &sealed).is_err());
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        assert!(seal.open(&acme, &String::from_utf8(altered).unwrap()).is_err());
        // Another process's random key opens nothing of this one's.
        assert!(StateSeal::new(None).unwrap().open(&acme, &sealed).is_err());
        assert!(matches!(StateSeal::new(Some("short")), Err(StateError::ShortKey)));
    }
}
