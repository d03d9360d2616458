//! The address policy of URLs a caller or a model supplies: http(s) only,
//! and (unless the operator allows internal addresses) global addresses
//! only, checked where the connection is made. Its client resolves names
//! through [`GlobalOnly`], which keeps the global answers and refuses a
//! name with none; a literal address never reaches a resolver, so
//! [`AddressPolicy::request`] checks it first. The client uses no proxy
//! (a proxy would connect to an address the server never sees) and
//! follows no redirect (the next hop would be a URL nobody checked).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use reqwest::{Method, Url};

use super::address::{self, Inward};

/// Why a URL may not be reached, said to whoever supplied it.
pub type Refusal = String;

/// Where caller-supplied URLs may lead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddressPolicy {
    allow_internal: bool,
    /// What the operator sets to allow internal addresses, for refusals.
    setting: &'static str,
}

impl AddressPolicy {
    /// Global addresses only, unless `allow_internal`; `setting` names what
    /// allows them (e.g. `[a2a] push_allow_private`), for the refusals.
    pub fn new(allow_internal: bool, setting: &'static str) -> Self {
        Self {
            allow_internal,
            setting,
        }
    }

    /// `Err` unless `ip` may be connected to.
    pub fn check_address(&self, host: &str, ip: IpAddr) -> Result<(), Refusal> {
        if self.allow_internal {
            return Ok(());
        }
        address::check(ip).map_err(|inward| self.refused(host, &inward))
    }

    fn refused(&self, host: &str, inward: &Inward) -> Refusal {
        format!(
            "host {host:?}: {inward}, not a global address; the server reaches none for a caller \
             unless its {} allows it",
            self.setting
        )
    }

    /// `url` parsed, if it is http(s) with a host, and its host allowed
    /// when it is a literal address (a name is checked when it resolves).
    pub fn parse(&self, url: &str) -> Result<Url, Refusal> {
        let parsed = Url::parse(url).map_err(|error| format!("not a URL: {error}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("scheme {:?} is not http or https", parsed.scheme()));
        }
        let host = parsed.host_str().unwrap_or_default();
        if host.is_empty() {
            return Err("the URL has no host".into());
        }
        if let Some(ip) = literal(&parsed) {
            self.check_address(host, ip)?;
        }
        Ok(parsed)
    }

    /// [`AddressPolicy::parse`], and every address its host resolves to
    /// now allowed: the early, clear answer when a URL is given (the
    /// client's resolver decides again at each connection).
    pub async fn check_now(&self, url: &str) -> Result<Url, Refusal> {
        let parsed = self.parse(url)?;
        if self.allow_internal {
            return Ok(parsed);
        }
        if literal(&parsed).is_none() {
            let host = parsed.host_str().unwrap_or_default();
            let port = parsed.port_or_known_default().unwrap_or(443);
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
                .await
                .map_err(|error| format!("host {host:?} does not resolve: {error}"))?
                .collect();
            if addrs.is_empty() {
                return Err(format!("host {host:?} has no address"));
            }
            for addr in addrs {
                self.check_address(host, addr.ip())?;
            }
        }
        Ok(parsed)
    }

    /// A request of `method` to `url` through `client` (one of
    /// [`AddressPolicy::client`]'s): refused as [`AddressPolicy::parse`]
    /// says.
    pub fn request(
        &self,
        client: &reqwest::Client,
        method: Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, Refusal> {
        Ok(client.request(method, self.parse(url)?))
    }

    /// A client for caller-supplied URLs: `builder` with no proxy, no
    /// redirects, and (unless internal addresses are allowed) names
    /// resolved to global addresses only.
    pub fn client(&self, builder: reqwest::ClientBuilder) -> Result<reqwest::Client, reqwest::Error> {
        let builder = builder.no_proxy().redirect(reqwest::redirect::Policy::none());
        let builder = if self.allow_internal {
            builder
        } else {
            builder.dns_resolver(Arc::new(GlobalOnly(*self)))
        };
        builder.build()
    }
}

/// `url`'s host, if it is an IP address rather than a name (the URL
/// parser writes every spelling of an IPv4 address as four decimals, and
/// an IPv6 address in brackets).
fn literal(url: &Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[').trim_end_matches(']').parse().ok()
}

/// A resolver that keeps the answers the policy allows, and refuses a
/// name with none left.
struct GlobalOnly(AddressPolicy);

impl reqwest::dns::Resolve for GlobalOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let answers: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refusal = format!("host {host:?} has no address");
            let mut allowed = Vec::with_capacity(answers.len());
            for addr in answers {
                match policy.check_address(&host, addr.ip()) {
                    Ok(()) => allowed.push(addr),
                    Err(why) => refusal = why,
                }
            }
            if allowed.is_empty() {
                return Err(refusal.into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusing() -> AddressPolicy {
        AddressPolicy::new(false, "[a2a] push_allow_private")
    }

    #[test]
    fn only_http_urls_with_a_host() {
        let policy = refusing();
        assert!(policy.parse("https://example.com/hook").is_ok());
        for url in ["ftp://example.com/", "file:///etc/passwd", "not a url", "http://"] {
            assert!(policy.parse(url).is_err(), "{url}");
        }
    }

    #[test]
    fn literal_hosts_are_checked_in_every_spelling() {
        let policy = refusing();
        for url in [
            "http://127.0.0.1:9/x",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://[::127.0.0.1]/",
            "http://[64:ff9b::7f00:1]/",
            "http://[64:ff9b:1::a00:1]/",
            "http://[2002:7f00:1::1]/",
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "http://[fe80::1]/",
        ] {
            let refusal = policy.parse(url).expect_err(url);
            assert!(refusal.contains("push_allow_private"), "{url}: {refusal}");
        }
        for url in [
            "http://93.184.216.34/",
            "http://[2606:4700::1111]/",
            "http://localhost/",
        ] {
            assert!(policy.parse(url).is_ok(), "{url}");
        }
        let open = AddressPolicy::new(true, "[a2a] push_allow_private");
        assert!(open.parse("http://127.0.0.1:9/x").is_ok());
    }

    #[tokio::test]
    async fn names_are_checked_by_what_they_resolve_to() {
        let refusal = refusing().check_now("http://localhost:80/").await.unwrap_err();
        assert!(refusal.starts_with("host \"localhost\": "), "{refusal}");
        let open = AddressPolicy::new(true, "[a2a] push_allow_private");
        assert!(open.check_now("http://localhost:80/").await.is_ok());
    }

    /// The client's resolver refuses a name whose answers are all
    /// internal, before any connection.
    #[tokio::test]
    async fn the_client_never_connects_to_a_name_that_resolves_inward() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let policy = refusing();
        let client = policy.client(crate::http_client::builder()).unwrap();
        let url = format!("http://localhost:{port}/");
        let error = policy
            .request(&client, Method::POST, &url)
            .unwrap()
            .send()
            .await
            .unwrap_err();
        assert!(error.is_connect(), "{error:?}");
        // A connection made would be waiting to be accepted by now.
        let accepted = listener.accept().map(|_| ());
        assert_eq!(
            accepted.map_err(|e| e.kind()),
            Err(std::io::ErrorKind::WouldBlock),
            "nothing connected"
        );
    }
}
