//! An address to listen on, as an operator writes it: an IP address and a
//! port (`127.0.0.1:50051`, `[::1]:50051`) or a host name and a port
//! (`localhost:50051`), resolved when the listener is bound. It never
//! resolves a name while the configuration is read.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use tokio::net::TcpListener;

/// `HOST:PORT`, where HOST is an IP address (IPv6 in brackets) or a name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenAddr {
    /// The host as written, without the brackets of an IPv6 address.
    host: String,
    port: u16,
}

impl ListenAddr {
    /// The port; 0 asks the system for a free one.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Binds a listener on the address (the first one a host name resolves
    /// to that can be bound).
    pub async fn bind(&self) -> std::io::Result<TcpListener> {
        TcpListener::bind((self.host.as_str(), self.port)).await
    }
}

impl From<SocketAddr> for ListenAddr {
    fn from(address: SocketAddr) -> Self {
        Self {
            host: address.ip().to_string(),
            port: address.port(),
        }
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

const SYNTAX: &str = "write HOST:PORT, e.g. 127.0.0.1:50051, [::1]:50051 or localhost:50051";

impl FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if let Ok(address) = text.parse::<SocketAddr>() {
            return Ok(address.into());
        }
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(format!("{text:?} has no port: {SYNTAX}"));
        };
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{text:?}: the port {port:?} is not a number from 0 to 65535: {SYNTAX}"))?;
        if host.starts_with('[') || host.contains(':') {
            return Err(format!("{text:?}: {host:?} is not an IPv6 address: {SYNTAX}"));
        }
        if !is_host_name(host) {
            return Err(format!(
                "{text:?}: {host:?} is not a host name or an IP address: {SYNTAX}"
            ));
        }
        Ok(Self {
            host: host.to_owned(),
            port,
        })
    }
}

/// A DNS name: dot-separated labels of letters, digits, `-` and `_`.
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.len() <= 253
        && host.trim_end_matches('.').split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_host_names_are_accepted() {
        for (text, shown) in [
            ("127.0.0.1:50051", "127.0.0.1:50051"),
            ("0.0.0.0:0", "0.0.0.0:0"),
            ("[::1]:50051", "[::1]:50051"),
            ("localhost:50051", "localhost:50051"),
            (
                "agentd-0.agentd.svc.cluster.local:9090",
                "agentd-0.agentd.svc.cluster.local:9090",
            ),
        ] {
            let address: ListenAddr = text.parse().unwrap_or_else(|error| panic!("{text}: {error}"));
            assert_eq!(address.to_string(), shown);
        }
    }

    #[test]
    fn malformed_addresses_say_what_is_wrong() {
        let error = |text: &str| text.parse::<ListenAddr>().unwrap_err();
        assert_eq!(error("localhost"), format!("\"localhost\" has no port: {SYNTAX}"));
        assert_eq!(
            error("localhost:http"),
            format!("\"localhost:http\": the port \"http\" is not a number from 0 to 65535: {SYNTAX}")
        );
        assert_eq!(
            error("localhost:70000"),
            format!("\"localhost:70000\": the port \"70000\" is not a number from 0 to 65535: {SYNTAX}")
        );
        assert!(error("::1:50051").contains("is not an IPv6 address"));
        assert!(error("[::g]:50051").contains("is not an IPv6 address"));
        assert!(error("my host:1").contains("\"my host\" is not a host name"));
        assert!(error(":1").contains("\"\" is not a host name"));
    }

    #[tokio::test]
    async fn a_host_name_is_resolved_when_bound() {
        let listener = "localhost:0".parse::<ListenAddr>().unwrap().bind().await.unwrap();
        assert!(listener.local_addr().unwrap().ip().is_loopback());
    }
}
