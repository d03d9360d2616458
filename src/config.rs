//! Configuration: one TOML file (`agentd.toml`) for the server and its
//! agents; every server setting can be overridden by a flag or an `AGENTD_*`
//! environment variable (see `main.rs`). With no file at all the server
//! hosts the default agent `assistant`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::agent::AgentSpec;

/// The whole `agentd.toml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub server: ServerFile,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
}

/// `[server]`: every field optional; flags and environment win over it.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub store: Option<String>,
    /// Seconds a suspended run waits for an answer before it expires.
    pub suspend_ttl_secs: Option<u64>,
    /// Seconds between two expiry sweeps; 0 disables the sweep.
    pub sweep_interval_secs: Option<u64>,
}

/// The settings a server runs with, after every source is merged.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSettings {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// The run store URL.
    pub store: String,
    pub suspend_ttl: Duration,
    /// How often suspended runs past their time to live are marked expired;
    /// zero disables the sweep (runs then expire when next read).
    pub sweep_interval: Duration,
    pub agents: Vec<AgentSpec>,
}

/// Where settings come from, highest precedence first.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub store: Option<String>,
    pub suspend_ttl_secs: Option<u64>,
    pub sweep_interval_secs: Option<u64>,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";
pub const DEFAULT_DATA_DIR: &str = "./agentd-data";
pub const DEFAULT_SUSPEND_TTL_SECS: u64 = 7 * 24 * 3600;
pub const DEFAULT_SWEEP_INTERVAL_SECS: u64 = 30;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        source: Box<toml::de::Error>,
    },
}

impl FileConfig {
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source: Box::new(source),
        })
    }

    /// Merges the file with the overrides and the embedded defaults.
    pub fn settle(self, overrides: Overrides) -> ServerSettings {
        let data_dir = overrides
            .data_dir
            .or(self.server.data_dir)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));
        let store = overrides
            .store
            .or(self.server.store)
            .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("agentd.sqlite3").display()));
        ServerSettings {
            listen: overrides
                .listen
                .or(self.server.listen)
                .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("the default address parses")),
            data_dir,
            store,
            suspend_ttl: Duration::from_secs(
                overrides
                    .suspend_ttl_secs
                    .or(self.server.suspend_ttl_secs)
                    .unwrap_or(DEFAULT_SUSPEND_TTL_SECS),
            ),
            sweep_interval: Duration::from_secs(
                overrides
                    .sweep_interval_secs
                    .or(self.server.sweep_interval_secs)
                    .unwrap_or(DEFAULT_SWEEP_INTERVAL_SECS),
            ),
            agents: if self.agents.is_empty() {
                vec![AgentSpec::assistant()]
            } else {
                self.agents
            },
        }
    }
}
