//! `[[mcp_servers]]` entries in `agentd.toml`: an MCP server reached over
//! stdio (a command agentd starts) or streamable HTTP (a URL). Only the
//! configuration's shape, defaults and checks live here; `Debug` never
//! prints environment or header values, which may hold secrets.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use serde::Deserialize;

use crate::config::settings::{renamed_millis_key, timeout_key};
use crate::tools::secrets::SecretMap;

/// How long a tool call may take when not configured.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long start-up keeps trying to reach a server when not configured.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// An MCP server as configured.
#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// How agents name it: `mcp:NAME` (every tool) or `mcp:NAME/TOOL`.
    pub name: String,
    /// stdio: the program to start (looked up on PATH).
    #[serde(default)]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: environment variables added to agentd's own; values may
    /// reference agentd's environment as `${NAME}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Streamable HTTP: the server's MCP endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// Streamable HTTP: request headers; values may reference environment
    /// variables as `${NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How long one tool call may take (`"1m"`; default
    /// [`DEFAULT_CALL_TIMEOUT`]).
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub timeout: Option<Duration>,
    /// Deprecated spelling of `timeout`, in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// How long start-up keeps trying to reach the server before it gives
    /// up (and the server does not start; default
    /// [`DEFAULT_STARTUP_TIMEOUT`]).
    #[serde(default, deserialize_with = "crate::config::duration::deserialize_option")]
    pub startup_timeout: Option<Duration>,
    /// Deprecated spelling of `startup_timeout`, in milliseconds.
    #[serde(default)]
    pub startup_timeout_ms: Option<u64>,
    /// The MCP protocol generation to speak (`"auto"`, the default: the
    /// 2026-07-28 protocol when the server offers it, else the server's
    /// own; or `"2026-07-28"`, `"2025-11-25"`, `"2025-06-18"` to pin one).
    #[serde(default)]
    pub protocol_version: Option<String>,
}

/// Which MCP protocol generation agentd speaks with a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// 2026-07-28 when the server offers it (`server/discover`), else the
    /// version the server's `initialize` answers with.
    Auto,
    /// 2026-07-28 only.
    Stateless,
    /// This version, with the `initialize` handshake (2025-11-25 or
    /// 2025-06-18).
    Initialize(&'static str),
}

/// The protocol versions `protocol_version` may pin.
const PINNABLE: [&str; 3] = ["2026-07-28", "2025-11-25", "2025-06-18"];

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env (values redacted)", &self.env.keys().collect::<Vec<_>>())
            .field("url", &self.url)
            .field(
                "headers (values redacted)",
                &self.headers.keys().collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("timeout_ms", &self.timeout_ms)
            .field("startup_timeout", &self.startup_timeout)
            .field("startup_timeout_ms", &self.startup_timeout_ms)
            .field("protocol_version", &self.protocol_version)
            .finish()
    }
}

/// How long a server's calls and its start-up may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// One tool call.
    pub call: Duration,
    /// Trying to reach the server at start-up.
    pub startup: Duration,
}

/// How to reach a server, with `${NAME}` references resolved.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Stdio {
        command: String,
        args: Vec<String>,
        env: SecretMap,
    },
    Http {
        url: String,
        /// Sent with every request; values marked sensitive.
        headers: HashMap<HeaderName, HeaderValue>,
    },
}

impl McpServerConfig {
    /// Checks the entry and resolves its environment references. Errors
    /// name the field, never a value.
    pub fn endpoint(&self) -> Result<Endpoint, String> {
        let valid_name = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid_name {
            return Err(format!(
                "name: {:?} is not a valid server name: use letters, digits, `_` or `-`",
                self.name
            ));
        }
        match (&self.command, &self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() {
                    return Err("headers: only a server with a url takes headers".into());
                }
                if command.trim().is_empty() {
                    return Err("command: must not be empty".into());
                }
                Ok(Endpoint::Stdio {
                    command: command.clone(),
                    args: self.args.clone(),
                    env: SecretMap::resolve(&self.env, "env")?,
                })
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() {
                    return Err("args, env: only a server with a command takes them".into());
                }
                let parsed = reqwest::Url::parse(url).map_err(|e| format!("url: {e}"))?;
                if !matches!(parsed.scheme(), "http" | "https") {
                    return Err(format!(
                        "url: the scheme must be http or https, not {}",
                        parsed.scheme()
                    ));
                }
                Ok(Endpoint::Http {
                    url: url.clone(),
                    headers: SecretMap::resolve(&self.headers, "headers")?.to_headers()?,
                })
            }
            (Some(_), Some(_)) => {
                Err("give either command (stdio) or url (streamable HTTP), not both".into())
            }
            (None, None) => Err("give command (stdio) or url (streamable HTTP)".into()),
        }
    }

    /// The protocol generation `protocol_version` asks for.
    pub fn protocol(&self) -> Result<Protocol, String> {
        match self.protocol_version.as_deref() {
            None | Some("auto") => Ok(Protocol::Auto),
            Some("2026-07-28") => Ok(Protocol::Stateless),
            Some(version) => PINNABLE
                .iter()
                .find(|known| **known == version)
                .map(|known| Protocol::Initialize(known))
                .ok_or_else(|| {
                    format!(
                        "protocol_version: {version:?} is not one agentd speaks: use \"auto\" or one of {}",
                        PINNABLE.join(", ")
                    )
                }),
        }
    }

    /// The entry's timeouts: each as configured, under its name or its
    /// deprecated one (with a warning), else the default. Errors name the
    /// field.
    pub fn timeouts(&self) -> Result<Timeouts, String> {
        let table = || format!("[[mcp_servers]] {:?}", self.name);
        let call = timeout_key(table(), self.timeout, self.timeout_ms, DEFAULT_CALL_TIMEOUT)?;
        let startup = renamed_millis_key(
            table(),
            "startup_timeout",
            self.startup_timeout,
            "startup_timeout_ms",
            self.startup_timeout_ms,
        )?
        .unwrap_or(DEFAULT_STARTUP_TIMEOUT);
        Ok(Timeouts { call, startup })
    }
}
