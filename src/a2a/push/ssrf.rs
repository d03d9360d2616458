//! Where A2A push notifications may go: http(s) URLs whose host resolves
//! to public addresses only, unless the operator allows private ones
//! (`[a2a] push_allow_private`). Checked when a configuration is made, and
//! again at each delivery after DNS resolution (a resolver that refuses
//! non-public answers), so that a name that later points inward is caught.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Why a URL may not be pushed to.
pub type Refusal = String;

/// Whether `ip` is an address a caller may make the server reach: not
/// loopback, private, link-local, unique-local, unspecified, multicast,
/// broadcast, documentation or shared (CGNAT) space.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}

/// `url` parsed, if it is http(s) with a host.
pub fn parse(url: &str) -> Result<reqwest::Url, Refusal> {
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("not a URL: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("scheme {:?} is not http or https", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("the URL has no host".into());
    }
    Ok(parsed)
}

/// Resolves `url`'s host and refuses it unless every address is public.
pub async fn check(url: &reqwest::Url) -> Result<(), Refusal> {
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = match literal_ip(url) {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => {
            let host = url.host_str().unwrap_or_default();
            tokio::net::lookup_host((host, port))
                .await
                .map_err(|error| format!("host {host:?} does not resolve: {error}"))?
                .collect()
        }
    };
    public_only(url.host_str().unwrap_or_default(), addrs).map(|_| ())
}

/// Refuses `url` if its host is a literal address that is not public.
/// A name needs no look here when the request goes through [`client`]:
/// its resolver answers public addresses only, and a literal address
/// never reaches it.
pub fn check_literal(url: &reqwest::Url) -> Result<(), Refusal> {
    match literal_ip(url) {
        Some(ip) => public_only(url.host_str().unwrap_or_default(), vec![SocketAddr::new(ip, 0)]).map(|_| ()),
        None => Ok(()),
    }
}

/// `url`'s host, if it is an IP address rather than a name.
fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

fn public_only(host: &str, addrs: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, Refusal> {
    if addrs.is_empty() {
        return Err(format!("host {host:?} has no address"));
    }
    if let Some(inner) = addrs.iter().find(|addr| !is_public(addr.ip())) {
        return Err(format!(
            "host {host:?} is {}, not a public address (the server's [a2a] push_allow_private allows it)",
            inner.ip()
        ));
    }
    Ok(addrs)
}

/// A resolver that answers public addresses only.
struct PublicResolver;

impl reqwest::dns::Resolve for PublicResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let addrs = public_only(&host, addrs)?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The HTTP client of push deliveries: no redirects, and (unless
/// `allow_private`) names resolve to public addresses only.
pub fn client(allow_private: bool) -> Result<reqwest::Client, String> {
    let builder = crate::http_client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")));
    let builder = if allow_private {
        builder
    } else {
        builder.dns_resolver(Arc::new(PublicResolver))
    };
    builder
        .build()
        .map_err(|error| format!("building the HTTP client: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inward_addresses_are_not_public() {
        for inner in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "224.0.0.1",
            "100.64.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(inner.parse().unwrap()), "{inner}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn only_http_urls_with_a_host() {
        assert!(parse("https://example.com/hook").is_ok());
        assert!(parse("ftp://example.com/").is_err());
        assert!(parse("file:///etc/passwd").is_err());
        assert!(parse("not a url").is_err());
    }

    #[tokio::test]
    async fn literal_private_hosts_are_refused() {
        for url in [
            "http://127.0.0.1:9/x",
            "http://[::1]/",
            "http://10.0.0.1/",
            "http://localhost:80/",
        ] {
            assert!(check(&parse(url).unwrap()).await.is_err(), "{url}");
        }
        for url in [
            "http://127.0.0.1:9/x",
            "http://[::1]/",
            "http://[::ffff:10.0.0.1]/",
        ] {
            assert!(check_literal(&parse(url).unwrap()).is_err(), "{url}");
        }
        for url in ["http://93.184.216.34/", "http://localhost/"] {
            assert!(check_literal(&parse(url).unwrap()).is_ok(), "{url}");
        }
    }
}
