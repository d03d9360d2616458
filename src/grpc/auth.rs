//! The authenticating interceptor: reads `authorization: Bearer <key>`,
//! finds the key's tenant and name and puts them in the request's
//! extensions, where the handlers take them from ([`tenant_of`],
//! `caller::decider_of`). Missing or wrong credentials
//! are UNAUTHENTICATED before the request is decoded. With no keys
//! configured every caller is the default tenant. Never logs a key.

use std::sync::Arc;

use tonic::metadata::MetadataMap;
use tonic::service::Interceptor;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

use crate::auth::{ApiKeys, Credential};
use crate::domain::Tenant;

/// Decides who a caller is. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Authenticator {
    /// `None`: the server is open.
    keys: Option<Arc<ApiKeys>>,
}

impl Authenticator {
    /// Accepts these keys; with none, lets everyone in as the default
    /// tenant.
    pub fn new(keys: ApiKeys) -> Self {
        Self {
            keys: (!keys.is_empty()).then(|| Arc::new(keys)),
        }
    }

    /// Lets everyone in as the default tenant.
    pub fn open() -> Self {
        Self::default()
    }

    pub fn is_open(&self) -> bool {
        self.keys.is_none()
    }

    /// The accepted keys; `None` when the server is open.
    pub fn keys(&self) -> Option<&ApiKeys> {
        self.keys.as_deref()
    }

    /// The caller's tenant, from its `authorization` header.
    pub fn authenticate(&self, metadata: &MetadataMap) -> Result<Tenant, Status> {
        Ok(self
            .identify(metadata)?
            .map_or_else(Tenant::default, |credential| credential.tenant))
    }

    /// The caller's key's tenant and name, from its `authorization`
    /// header; `None` when the server is open.
    pub fn identify(&self, metadata: &MetadataMap) -> Result<Option<Credential>, Status> {
        let Some(keys) = &self.keys else {
            return Ok(None);
        };
        let Some(header) = metadata.get("authorization") else {
            return Err(unauthenticated(
                "MISSING_CREDENTIALS",
                "missing credentials: send the header `authorization: Bearer <API key>`",
            ));
        };
        let key = bearer_token(header.as_bytes()).ok_or_else(|| {
            unauthenticated(
                "MALFORMED_CREDENTIALS",
                "the authorization header must be `Bearer <API key>`",
            )
        })?;
        keys.identify(key)
            .map(Some)
            .ok_or_else(|| unauthenticated("INVALID_API_KEY", "invalid API key"))
    }
}

impl Interceptor for Authenticator {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        match self.identify(request.metadata())? {
            Some(Credential { tenant, name }) => {
                request.extensions_mut().insert(tenant);
                request.extensions_mut().insert(super::caller::CallerName(name));
            }
            None => {
                request.extensions_mut().insert(Tenant::default());
            }
        }
        Ok(request)
    }
}

/// The key of a `Bearer <key>` header value (the scheme in any case).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    const SCHEME: &[u8] = b"bearer ";
    if value.len() <= SCHEME.len() || !value[..SCHEME.len()].eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let token = value[SCHEME.len()..].trim_ascii();
    (!token.is_empty()).then_some(token)
}

fn unauthenticated(reason: &str, message: &str) -> Status {
    Status::with_error_details(Code::Unauthenticated, message, super::status::info(reason, &[]))
}

/// The tenant the interceptor found for this request; the default tenant
/// when the service is used without the interceptor.
pub fn tenant_of<T>(request: &Request<T>) -> Tenant {
    request.extensions().get::<Tenant>().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens() {
        assert_eq!(bearer_token(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"bearer   abc "), Some(&b"abc"[..]));
        assert_eq!(bearer_token(b"Basic abc"), None);
        assert_eq!(bearer_token(b"Bearer "), None);
        assert_eq!(bearer_token(b"Bearer"), None);
        assert_eq!(bearer_token(b"abc"), None);
    }
}
