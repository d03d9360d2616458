//! TLS for the gRPC port, with rustls: a certificate chain and its key
//! (PEM files), and optionally a CA whose client certificates the server
//! requires (mutual TLS). The files are read once, at startup; a missing
//! or unreadable file, or a key without a certificate, stops the server
//! from starting rather than letting it serve in the clear.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};

/// `[tls]` (and `--tls-cert`, `--tls-key`, `--tls-client-ca`).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The server's certificate chain, PEM.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// The certificate's private key, PEM.
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// CA certificates, PEM: when set, clients must present a certificate
    /// signed by one of them.
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
}

/// TLS settings that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("TLS needs both a certificate and its key (tls.cert / --tls-cert and tls.key / --tls-key)")]
    Incomplete,
    #[error("tls.client_ca (--tls-client-ca) needs tls.cert and tls.key")]
    ClientCaWithoutTls,
    #[error("reading {path}: {error}")]
    Read { path: PathBuf, error: std::io::Error },
    #[error("{path} holds no PEM {what}")]
    NotPem { path: PathBuf, what: &'static str },
}

impl TlsConfig {
    /// Each field of `self` that is set, else `other`'s.
    pub fn or(self, other: TlsConfig) -> TlsConfig {
        TlsConfig {
            cert: self.cert.or(other.cert),
            key: self.key.or(other.key),
            client_ca: self.client_ca.or(other.client_ca),
        }
    }

    /// Whether the server speaks TLS.
    pub fn is_enabled(&self) -> bool {
        self.cert.is_some() || self.key.is_some()
    }

    /// Reads the files: `None` when TLS is off.
    pub fn load(&self) -> Result<Option<ServerTlsConfig>, TlsError> {
        let (cert, key) = match (&self.cert, &self.key) {
            (None, None) if self.client_ca.is_some() => return Err(TlsError::ClientCaWithoutTls),
            (None, None) => return Ok(None),
            (Some(cert), Some(key)) => (cert, key),
            _ => return Err(TlsError::Incomplete),
        };
        let identity = Identity::from_pem(read_pem(cert, "certificate")?, read_pem(key, "private key")?);
        let mut config = ServerTlsConfig::new().identity(identity);
        if let Some(ca) = &self.client_ca {
            config = config.client_ca_root(Certificate::from_pem(read_pem(ca, "certificate")?));
        }
        Ok(Some(config))
    }
}

/// A PEM file's text; an error if it has no PEM block at all.
fn read_pem(path: &Path, what: &'static str) -> Result<String, TlsError> {
    let text = std::fs::read_to_string(path).map_err(|error| TlsError::Read {
        path: path.to_owned(),
        error,
    })?;
    if !text.contains("-----BEGIN ") {
        return Err(TlsError::NotPem {
            path: path.to_owned(),
            what,
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_settings_are_refused() {
        let only_cert = TlsConfig {
            cert: Some("cert.pem".into()),
            ..TlsConfig::default()
        };
        assert!(matches!(only_cert.load(), Err(TlsError::Incomplete)));
        let only_ca = TlsConfig {
            client_ca: Some("ca.pem".into()),
            ..TlsConfig::default()
        };
        assert!(matches!(only_ca.load(), Err(TlsError::ClientCaWithoutTls)));
        assert!(TlsConfig::default().load().unwrap().is_none());
    }

    #[test]
    fn files_must_exist_and_hold_pem() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("cert.pem");
        std::fs::write(&text, "not a certificate").unwrap();
        let config = TlsConfig {
            cert: Some(text.clone()),
            key: Some(dir.path().join("missing.pem")),
            client_ca: None,
        };
        assert!(matches!(config.load(), Err(TlsError::NotPem { .. })));
        let config = TlsConfig {
            cert: Some(dir.path().join("missing.pem")),
            key: Some(text),
            client_ca: None,
        };
        assert!(matches!(config.load(), Err(TlsError::Read { .. })));
    }

    #[test]
    fn flags_override_the_file_field_by_field() {
        let file = TlsConfig {
            cert: Some("file-cert".into()),
            key: Some("file-key".into()),
            client_ca: None,
        };
        let flags = TlsConfig {
            key: Some("flag-key".into()),
            ..TlsConfig::default()
        };
        let merged = flags.or(file);
        assert_eq!(merged.cert, Some("file-cert".into()));
        assert_eq!(merged.key, Some("flag-key".into()));
    }
}
