//! Every outbound HTTP client (model providers, HTTP and MCP tools,
//! webhooks, A2A push) is built from [`builder`]: reqwest over rustls, with
//! ring as rustls's crypto provider, installed once for the process before
//! the first client is built. Where each may go (its redirects, its
//! addresses, its proxy) is `crate::outbound`'s. Nothing else here.

use std::sync::Once;

/// A reqwest client builder whose TLS uses ring.
pub fn builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder()
}

/// Makes ring the process's rustls crypto provider, once. A provider
/// installed earlier (by an embedding program) stays.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err: another provider was installed first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
