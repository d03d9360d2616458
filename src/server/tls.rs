//! TLS for the gRPC port, with rustls: a certificate chain and its key
//! (PEM files), and optionally a CA whose client certificates the server
//! requires (mutual TLS). The files are read once, at startup; a missing
//! or unreadable file, or a key without a certificate, stops the server
//! from starting rather than letting it serve in the clear. Which files
//! they are is configuration (`config::TlsConfig`); this module only reads
//! them into tonic's `ServerTlsConfig`.

use std::path::{Path, PathBuf};

use tonic::transport::{Certificate, Identity, ServerTlsConfig};

use crate::config::TlsConfig;

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

/// Reads the files `config` names: `None` when TLS is off.
pub(super) fn load(config: &TlsConfig) -> Result<Option<ServerTlsConfig>, TlsError> {
    let (cert, key) = match (&config.cert, &config.key) {
        (None, None) if config.client_ca.is_some() => return Err(TlsError::ClientCaWithoutTls),
        (None, None) => return Ok(None),
        (Some(cert), Some(key)) => (cert, key),
        _ => return Err(TlsError::Incomplete),
    };
    let identity = Identity::from_pem(read_pem(cert, "certificate")?, read_pem(key, "private key")?);
    let mut tls = ServerTlsConfig::new().identity(identity);
    if let Some(ca) = &config.client_ca {
        tls = tls.client_ca_root(Certificate::from_pem(read_pem(ca, "certificate")?));
    }
    Ok(Some(tls))
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
        assert!(matches!(load(&only_cert), Err(TlsError::Incomplete)));
        let only_ca = TlsConfig {
            client_ca: Some("ca.pem".into()),
            ..TlsConfig::default()
        };
        assert!(matches!(load(&only_ca), Err(TlsError::ClientCaWithoutTls)));
        assert!(load(&TlsConfig::default()).unwrap().is_none());
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
        assert!(matches!(load(&config), Err(TlsError::NotPem { .. })));
        let config = TlsConfig {
            cert: Some(dir.path().join("missing.pem")),
            key: Some(text),
            client_ca: None,
        };
        assert!(matches!(load(&config), Err(TlsError::Read { .. })));
    }
}
