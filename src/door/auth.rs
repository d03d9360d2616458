//! Who a caller is: the API key of `authorization: Bearer <key>` names its
//! tenant and the key's name ([`Authenticator`]); with mutual TLS and no
//! key, the subject of the client certificate names it. With no keys
//! configured every caller is the default tenant. Every surface asks here:
//! the HTTP surfaces through the door's layer, which puts the [`Tenant`]
//! and the [`CallerName`] in the request's extensions, gRPC through its
//! interceptor (`grpc/auth.rs`), which does the same. Never logs a key.

use std::sync::Arc;

use axum::http::Extensions;
use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};

use crate::auth::{ApiKeys, Credential};
use crate::domain::Tenant;

/// Decides who a caller is. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Authenticator {
    /// `None`: the server is open.
    keys: Option<Arc<ApiKeys>>,
}

/// Why a caller was not let in: the reason (an ErrorInfo reason, such as
/// `INVALID_API_KEY`) and what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unauthenticated {
    pub reason: &'static str,
    pub message: &'static str,
}

impl Unauthenticated {
    /// The `WWW-Authenticate` challenge of a 401 (RFC 6750): the scheme,
    /// and what to send in `error_description` (with `invalid_token` when
    /// a key was sent, and no error code when none was).
    pub fn challenge(&self) -> String {
        let error = match self.reason {
            "MISSING_CREDENTIALS" => "",
            _ => "error=\"invalid_token\", ",
        };
        format!(
            "Bearer realm=\"agentd\", {error}error_description=\"{}\"",
            crate::mcp::SEND_THE_KEY
        )
    }
}

/// The name of the API key a call was authenticated with, or the subject
/// of its client certificate (put in its extensions when it is let in).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallerName(pub String);

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

    /// The key's tenant and name, from the value of the caller's
    /// `authorization` header; `None` when the server is open.
    pub fn identify(&self, authorization: Option<&[u8]>) -> Result<Option<Credential>, Unauthenticated> {
        let Some(keys) = &self.keys else {
            return Ok(None);
        };
        let Some(header) = authorization else {
            return Err(Unauthenticated {
                reason: "MISSING_CREDENTIALS",
                message: "missing credentials: send the header `Authorization: Bearer <API key>` with one \
                          of the server's API keys (agentd takes API keys, not OAuth)",
            });
        };
        let key = bearer_token(header).ok_or(Unauthenticated {
            reason: "MALFORMED_CREDENTIALS",
            message: "the authorization header must be `Bearer <API key>`, with one of the server's API keys",
        })?;
        keys.identify(key).map(Some).ok_or(Unauthenticated {
            reason: "INVALID_API_KEY",
            message: "invalid API key: send the header `Authorization: Bearer <API key>` with one of \
                      the server's API keys",
        })
    }

    /// Lets a caller in: its [`Tenant`] and [`CallerName`] go into
    /// `extensions` (which also hold the connection's TLS details), where
    /// every surface reads them.
    pub fn admit(
        &self,
        authorization: Option<&[u8]>,
        extensions: &mut Extensions,
    ) -> Result<(), Unauthenticated> {
        let credential = self.identify(authorization)?;
        let name = match &credential {
            Some(credential) => credential.name.clone(),
            None => client_subject(extensions).unwrap_or_default(),
        };
        let tenant = credential.map(|credential| credential.tenant).unwrap_or_default();
        extensions.insert(tenant);
        extensions.insert(CallerName(name));
        Ok(())
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

/// The caller's name, from a request's extensions: its API key's name, or
/// the subject of its client certificate; empty without either.
pub fn caller_name(extensions: &Extensions) -> String {
    if let Some(CallerName(name)) = extensions.get::<CallerName>() {
        return name.clone();
    }
    client_subject(extensions).unwrap_or_default()
}

/// The tenant the door let a request in as; the default tenant when
/// nothing authenticated it (an open server's library use).
pub fn tenant(extensions: &Extensions) -> Tenant {
    extensions.get::<Tenant>().cloned().unwrap_or_default()
}

/// The subject of the client certificate of a mutual TLS connection.
fn client_subject(extensions: &Extensions) -> Option<String> {
    let certs = extensions
        .get::<TlsConnectInfo<TcpConnectInfo>>()
        .and_then(TlsConnectInfo::peer_certs)?;
    let first = certs.first()?;
    let (_, certificate) = x509_parser::parse_x509_certificate(first.as_ref()).ok()?;
    Some(certificate.subject().to_string())
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

    #[test]
    fn an_open_door_admits_everyone_as_the_default_tenant() {
        let mut extensions = Extensions::new();
        Authenticator::open().admit(None, &mut extensions).unwrap();
        assert_eq!(tenant(&extensions), Tenant::default());
        assert_eq!(caller_name(&extensions), "");
    }
}
