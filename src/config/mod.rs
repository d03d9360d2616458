//! The server's settings: each declared once (`server.rs`), with its key in
//! `agentd.toml`, its flag, its `AGENTD_*` variable and its default;
//! `settings.rs` is the machinery that joins the sources (flag, then
//! variable, then file, then default). Also how people write durations,
//! addresses, origins and the public URL, and how URLs with credentials
//! are printed (the domain's `redact`). It imports only the domain. The
//! whole file, with its agents, tools and webhooks, is read above it
//! (`server/settings.rs`).

pub mod duration;
mod listen;
mod origins;
mod public_url;
mod server;
pub(crate) mod settings;

use std::path::PathBuf;

pub use crate::domain::{redact, Redacted};
pub use listen::ListenAddr;
pub use origins::AllowedOrigins;
pub use public_url::PublicUrl;
pub use server::{
    A2aConfig, A2aLayer, AuthConfig, AuthLayer, Overrides, ServerConfig, ServerLayer, TlsConfig, TlsLayer,
};
pub use settings::{Layer, Source};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
    /// A flag's or variable's value that its setting cannot take.
    #[error("{setting}: {reason}")]
    Invalid { setting: String, reason: String },
    /// One setting given twice in one source, under its current name and
    /// its deprecated one.
    #[error("{new} and {old} are one setting ({old} is its deprecated spelling): give only {new}")]
    SpelledTwice { new: String, old: String },
}
