//! Every server setting, declared once: its key in `agentd.toml` (the
//! field's name, in the table named), its flag, its `AGENTD_*` variable,
//! its default and its help. To add a setting, add it here (and to the
//! table of `docs/configuration.md`); the flags, the variables, the file
//! and `--help` follow.
//! Precedence is the same for each: flag, then variable, then file, then
//! default.

use std::path::PathBuf;
use std::time::Duration;

use super::listen::ListenAddr;
use super::origins::AllowedOrigins;
use super::public_url::PublicUrl;
use super::settings::{settings, Layer};
use super::ConfigError;

settings! {
    /// `[server]`: where the server listens and keeps its runs, and how
    /// long runs and leases last.
    table "[server]": ServerLayer => ServerConfig {
        /// Address to listen on: HOST:PORT, with an IP address or a host
        /// name.
        listen: ListenAddr, flag "--listen ADDR", env "AGENTD_LISTEN",
            default "127.0.0.1:50051";
        /// Folder for the embedded SQLite store.
        data_dir: PathBuf, flag "--data-dir DIR", env "AGENTD_DATA_DIR",
            default "./agentd-data";
        /// Run store URL: sqlite://PATH (add ?synchronous=normal to trade
        /// power-loss durability for fewer fsyncs), postgres://... or memory:.
        store: String, flag "--store URL", env "AGENTD_STORE",
            default none "SQLite in the data dir";
        /// How long a suspended run waits for an answer before it expires.
        suspend_ttl: Duration, flag "--suspend-ttl DURATION", env "AGENTD_SUSPEND_TTL",
            default "7d",
            formerly suspend_ttl_secs in Seconds,
                flag "--suspend-ttl-secs", env "AGENTD_SUSPEND_TTL_SECS";
        /// How often suspended runs past their time to live are marked
        /// expired (and idle threads deleted); 0s disables the sweep.
        sweep_interval: Duration, flag "--sweep-interval DURATION", env "AGENTD_SWEEP_INTERVAL",
            default "30s",
            formerly sweep_interval_secs in Seconds,
                flag "--sweep-interval-secs", env "AGENTD_SWEEP_INTERVAL_SECS";
        /// How long open streams and executing runs get to finish after
        /// SIGINT/SIGTERM before the server closes them.
        drain_timeout: Duration, flag "--drain-timeout DURATION", env "AGENTD_DRAIN_TIMEOUT",
            default "10s",
            formerly drain_secs in Seconds, flag "--drain-secs", env "AGENTD_DRAIN_SECS";
        /// Browser origins whose pages may call the server (gRPC-Web, with
        /// CORS): a comma-separated list such as https://app.example.com,
        /// or * for any.
        cors_allow_origin: AllowedOrigins, flag "--cors-allow-origin ORIGINS",
            env "AGENTD_CORS_ALLOW_ORIGIN",
            default none "same origin only";
        /// The secret (at least 32 bytes) that seals the requestState of
        /// MCP input-required results, so that a client cannot forge or
        /// alter one; replicas behind one address must share it.
        mcp_state_key: String, flag "--mcp-state-key KEY", env "AGENTD_MCP_STATE_KEY",
            default none "a random key per process";
        /// Where clients reach the server when that is not where it
        /// listens (behind a reverse proxy, under a public host name):
        /// scheme://host[:port][/path]. The agent cards name it, and its
        /// host is allowed in Host.
        public_url: PublicUrl, flag "--public-url URL", env "AGENTD_PUBLIC_URL",
            default none "none: the cards name the allowed host a request names";
        /// Host names (or host:port) that requests a browser can make may
        /// name in their Host header, against DNS rebinding: a
        /// comma-separated list, or * for any. Plain gRPC is not held to it.
        allowed_hosts: String, flag "--allowed-hosts HOSTS", env "AGENTD_ALLOWED_HOSTS",
            default none "localhost, 127.0.0.1, ::1 and the host of public_url";
        /// Former name of allowed_hosts, still read when allowed_hosts is
        /// not given.
        mcp_allowed_hosts: String, flag "--mcp-allowed-hosts HOSTS", env "AGENTD_MCP_ALLOWED_HOSTS",
            default none "as allowed_hosts";
        /// Serve Prometheus metrics (GET /metrics) on this address, e.g.
        /// 127.0.0.1:9090.
        metrics_listen: ListenAddr, flag "--metrics-listen ADDR", env "AGENTD_METRICS_LISTEN",
            default none "no metrics endpoint";
        /// This replica's id, the owner of the leases on the runs it
        /// executes; unique among replicas sharing a store.
        replica_id: String, flag "--replica-id ID", env "AGENTD_REPLICA_ID",
            default none "a fresh UUID";
        /// How long a run lease holds without renewal: a replica that stops
        /// renewing (stuck, or cut off from the store) loses its running
        /// runs to another this long after its last write (on PostgreSQL,
        /// one that dies loses them at once).
        lease_ttl: Duration, flag "--lease-ttl DURATION", env "AGENTD_LEASE_TTL",
            default "10s",
            formerly lease_ttl_ms in Milliseconds, flag "--lease-ttl-ms", env "AGENTD_LEASE_TTL_MS";
        /// How often the leases of executing runs are renewed.
        lease_renew: Duration, flag "--lease-renew DURATION", env "AGENTD_LEASE_RENEW",
            default "2s",
            formerly lease_renew_ms in Milliseconds,
                flag "--lease-renew-ms", env "AGENTD_LEASE_RENEW_MS";
        /// How long a start or a Resume may go on before its run is
        /// written, when it reaches no durable point sooner (a suspension,
        /// a finish, a tool with side effects): a slow model step then has
        /// its run stored, so that another replica could take it over.
        first_write_deadline: Duration, flag "--first-write-deadline DURATION",
            env "AGENTD_FIRST_WRITE_DEADLINE",
            default "5ms";
        /// How often to look for running runs whose lease expired or whose
        /// replica is gone (PostgreSQL); 0s disables the search.
        recovery_interval: Duration, flag "--recovery-interval DURATION",
            env "AGENTD_RECOVERY_INTERVAL",
            default "1s",
            formerly recovery_interval_ms in Milliseconds,
                flag "--recovery-interval-ms", env "AGENTD_RECOVERY_INTERVAL_MS";
    }
}

settings! {
    /// `[tls]`: the certificate, key and client CA files of the gRPC port
    /// (PEM); the server reads them at startup (`server/tls.rs`).
    table "[tls]": TlsLayer => TlsConfig {
        /// The TLS certificate chain (PEM); with --tls-key the server speaks
        /// TLS only.
        cert: PathBuf, flag "--tls-cert PATH", env "AGENTD_TLS_CERT",
            default none "plaintext";
        /// The private key of --tls-cert (PEM).
        key: PathBuf, flag "--tls-key PATH", env "AGENTD_TLS_KEY",
            default none "none";
        /// CA certificates (PEM): clients must present a certificate they
        /// signed (mutual TLS).
        client_ca: PathBuf, flag "--tls-client-ca PATH", env "AGENTD_TLS_CLIENT_CA",
            default none "no client certificates";
    }
}

settings! {
    /// `[auth]`: the shared API keys file, and whether health and
    /// reflection need a key too (by default they are open, for probes and
    /// tools). Tenants' own keys are in `[[tenants]]`.
    table "[auth]": AuthLayer => AuthConfig {
        /// A file of `tenant:key` lines (`#` starts a comment): API keys the
        /// server accepts, besides those of [[tenants]].
        api_keys_file: PathBuf, flag "--api-keys-file PATH", env "AGENTD_API_KEYS_FILE",
            default none "none";
        /// grpc.health.v1.Health requires an API key too.
        authenticate_health: bool, flag "--authenticate-health BOOL",
            env "AGENTD_AUTHENTICATE_HEALTH",
            default "false";
        /// Server reflection requires an API key too.
        authenticate_reflection: bool, flag "--authenticate-reflection BOOL",
            env "AGENTD_AUTHENTICATE_REFLECTION",
            default "false";
    }
}

settings! {
    /// `[a2a]`: the A2A service's push notifications.
    table "[a2a]": A2aLayer => A2aConfig {
        /// A2A push notifications may go to loopback, private, link-local
        /// and other non-public addresses (refused by default: a caller
        /// could otherwise make the server reach its own network).
        push_allow_private: bool, flag "--a2a-push-allow-private BOOL",
            env "AGENTD_A2A_PUSH_ALLOW_PRIVATE",
            default "false";
    }
}

/// The settings that flags and variables can give: those of `[server]`,
/// `[tls]`, `[auth]` and `[a2a]`, as one source gives them.
#[derive(Clone, Debug, Default, PartialEq, clap::Args)]
pub struct Overrides {
    #[command(flatten)]
    pub server: ServerLayer,
    #[command(flatten)]
    pub tls: TlsLayer,
    #[command(flatten)]
    pub auth: AuthLayer,
    #[command(flatten)]
    pub a2a: A2aLayer,
}

impl Overrides {
    /// The `AGENTD_*` variables, read through `var` (`std::env::var`, or a
    /// map in tests).
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self {
            server: ServerLayer::from_env(&var)?,
            tls: TlsLayer::from_env(&var)?,
            auth: AuthLayer::from_env(&var)?,
            a2a: A2aLayer::from_env(&var)?,
        })
    }

    /// The flags as clap parsed them, with deprecated spellings folded in.
    pub fn from_flags(flags: Overrides) -> Result<Self, ConfigError> {
        let source = super::settings::Source::Flags;
        Ok(Self {
            server: flags.server.fold_deprecated(&source)?,
            tls: flags.tls.fold_deprecated(&source)?,
            auth: flags.auth.fold_deprecated(&source)?,
            a2a: flags.a2a.fold_deprecated(&source)?,
        })
    }

    /// Each setting these overrides give, else the one `lower` gives.
    pub fn or(self, lower: Overrides) -> Overrides {
        Overrides {
            server: self.server.or(lower.server),
            tls: self.tls.or(lower.tls),
            auth: self.auth.or(lower.auth),
            a2a: self.a2a.or(lower.a2a),
        }
    }
}

impl ServerConfig {
    /// The run store's URL: the one configured, else SQLite in the data
    /// folder.
    pub fn store_url(&self) -> String {
        self.store
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.data_dir.join("agentd.sqlite3").display()))
    }
}

impl ServerConfig {
    /// The allowed `Host` names as written: `allowed_hosts`, else its
    /// former name `mcp_allowed_hosts`; `None`: the defaults.
    pub fn allowed_hosts(&self) -> Option<&str> {
        self.allowed_hosts
            .as_deref()
            .or(self.mcp_allowed_hosts.as_deref())
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerLayer::default().resolve()
    }
}

impl TlsConfig {
    /// Whether the server speaks TLS.
    pub fn is_enabled(&self) -> bool {
        self.cert.is_some() || self.key.is_some()
    }
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsLayer::default().resolve()
    }
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthLayer::default().resolve()
    }
}

impl Default for A2aConfig {
    fn default() -> Self {
        A2aLayer::default().resolve()
    }
}
