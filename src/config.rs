//! Configuration: one TOML file (`agentd.toml`) for the server and its
//! agents; every server setting can be overridden by a flag or an `AGENTD_*`
//! environment variable (see `main.rs`). With no file at all the server
//! hosts the default agent `assistant`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::agent::AgentSpec;
use crate::auth::{AuthConfig, TenantConfig};
use crate::limits::Limits;
use crate::model::ProviderConfigs;
use crate::runtime::LeaseSettings;
use crate::server::TlsConfig;
use crate::tools::mcp::McpServerConfig;
use crate::tools::ToolConfig;

/// The whole `agentd.toml`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub server: ServerFile,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
    /// `[[tools]]`: client-executed and HTTP tools that agents use by name.
    #[serde(default)]
    pub tools: Vec<ToolConfig>,
    /// `[[mcp_servers]]`: MCP servers whose tools agents use.
    #[serde(default)]
    pub mcp_servers: Vec<McpServerConfig>,
    /// `[providers.NAME]`: model providers that agents name in `model`.
    #[serde(default)]
    pub providers: ProviderConfigs,
    /// `[[tenants]]`: tenants and where their API keys are.
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    /// `[auth]`: the shared API keys file; whether health and reflection
    /// need a key.
    #[serde(default)]
    pub auth: AuthConfig,
    /// `[tls]`: certificate, key and client CA files.
    #[serde(default)]
    pub tls: TlsConfig,
    /// `[limits]`: hard limits on requests and runs.
    #[serde(default)]
    pub limits: Limits,
    /// `[threads]`: conversation threads.
    #[serde(default)]
    pub threads: ThreadsFile,
}

/// `[threads]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThreadsFile {
    /// Threads idle for longer than this (`"30d"`, `"12h"`, `"90m"`,
    /// `"45s"`) are deleted with their runs by the sweep; unset keeps them.
    #[serde(default, deserialize_with = "retention")]
    pub retention: Option<Duration>,
}

fn retention<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_period(&text).map(Some).map_err(serde::de::Error::custom)
}

/// A period such as `30d`, `12h`, `90m` or `45s`: a positive whole number
/// and one unit.
pub fn parse_period(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let invalid = || {
        format!("invalid period {text:?}: write a number and a unit, e.g. \"30d\", \"12h\", \"90m\", \"45s\"")
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(invalid)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(invalid()),
    };
    if number == 0 {
        return Err(format!("invalid period {text:?}: it must be more than zero"));
    }
    number
        .checked_mul(seconds)
        .map(Duration::from_secs)
        .ok_or_else(invalid)
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
    /// Address of the Prometheus metrics endpoint; none serves no metrics.
    pub metrics_listen: Option<SocketAddr>,
    /// This replica's id (the owner of its run leases); unique per replica.
    pub replica_id: Option<String>,
    /// Milliseconds a run lease holds without renewal.
    pub lease_ttl_ms: Option<u64>,
    /// Milliseconds between two renewals of an executing run's lease.
    pub lease_renew_ms: Option<u64>,
    /// Milliseconds between two searches for runs whose lease expired.
    pub recovery_interval_ms: Option<u64>,
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
    /// Where `GET /metrics` is served; `None`: nowhere.
    pub metrics_listen: Option<SocketAddr>,
    /// This replica's id; `None`: a fresh one per process.
    pub replica_id: Option<String>,
    /// Run leases and crash recovery.
    pub lease: LeaseSettings,
    pub agents: Vec<AgentSpec>,
    /// Configured tools (`[[tools]]`).
    pub tools: Vec<ToolConfig>,
    /// Configured MCP servers (`[[mcp_servers]]`).
    pub mcp_servers: Vec<McpServerConfig>,
    /// Model providers (`[providers.NAME]`), besides the built-in ones.
    pub providers: ProviderConfigs,
    /// Tenants with API keys (`[[tenants]]`).
    pub tenants: Vec<TenantConfig>,
    /// Authentication (`[auth]`, `--api-keys-file`).
    pub auth: AuthConfig,
    /// TLS (`[tls]`, `--tls-cert`, `--tls-key`, `--tls-client-ca`).
    pub tls: TlsConfig,
    /// Hard limits (`[limits]`).
    pub limits: Limits,
    /// Threads idle for longer are deleted (`[threads] retention`).
    pub thread_retention: Option<Duration>,
}

/// Where settings come from, highest precedence first.
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub store: Option<String>,
    pub suspend_ttl_secs: Option<u64>,
    pub sweep_interval_secs: Option<u64>,
    pub metrics_listen: Option<SocketAddr>,
    pub replica_id: Option<String>,
    pub lease_ttl_ms: Option<u64>,
    pub lease_renew_ms: Option<u64>,
    pub recovery_interval_ms: Option<u64>,
    /// A file of `tenant:key` lines.
    pub api_keys_file: Option<PathBuf>,
    /// TLS files; each set one replaces the file's.
    pub tls: TlsConfig,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";
pub const DEFAULT_DATA_DIR: &str = "./agentd-data";
pub const DEFAULT_SUSPEND_TTL_SECS: u64 = 7 * 24 * 3600;
pub const DEFAULT_SWEEP_INTERVAL_SECS: u64 = 30;

/// Lease settings: overrides, then the file, then the defaults.
fn lease_settings(overrides: &Overrides, file: &ServerFile) -> LeaseSettings {
    let defaults = LeaseSettings::default();
    let millis = |over: Option<u64>, file: Option<u64>, default: Duration| {
        over.or(file).map_or(default, Duration::from_millis)
    };
    LeaseSettings {
        ttl: millis(overrides.lease_ttl_ms, file.lease_ttl_ms, defaults.ttl),
        renew_every: millis(
            overrides.lease_renew_ms,
            file.lease_renew_ms,
            defaults.renew_every,
        ),
        recovery_interval: millis(
            overrides.recovery_interval_ms,
            file.recovery_interval_ms,
            defaults.recovery_interval,
        ),
    }
}

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
        let lease = lease_settings(&overrides, &self.server);
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
            metrics_listen: overrides.metrics_listen.or(self.server.metrics_listen),
            replica_id: overrides.replica_id.clone().or(self.server.replica_id.clone()),
            lease,
            agents: if self.agents.is_empty() {
                vec![AgentSpec::assistant()]
            } else {
                self.agents
            },
            tools: self.tools,
            mcp_servers: self.mcp_servers,
            providers: self.providers,
            tenants: self.tenants,
            auth: AuthConfig {
                api_keys_file: overrides.api_keys_file.or(self.auth.api_keys_file),
                ..self.auth
            },
            tls: overrides.tls.or(self.tls),
            limits: self.limits,
            thread_retention: self.threads.retention,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_parse() {
        assert_eq!(parse_period("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_period("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_period(" 90m "), Ok(Duration::from_secs(90 * 60)));
        assert_eq!(parse_period("45s"), Ok(Duration::from_secs(45)));
        for bad in [
            "",
            "d",
            "30",
            "30 d",
            "30w",
            "0d",
            "-1d",
            "1.5h",
            "99999999999999999999d",
        ] {
            assert!(parse_period(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn thread_retention_is_read_from_the_file() {
        let file: FileConfig = toml::from_str("[threads]\nretention = \"7d\"\n").expect("parses");
        let settings = file.settle(Overrides::default());
        assert_eq!(settings.thread_retention, Some(Duration::from_secs(7 * 86_400)));
        assert!(toml::from_str::<FileConfig>("[threads]\nretention = \"soon\"\n").is_err());
        let none = FileConfig::default().settle(Overrides::default());
        assert_eq!(none.thread_retention, None);
    }
}
