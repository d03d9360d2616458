//! The web inbox, where a person answers what agents ask: its pages, built
//! from `web/` into `web/dist/` (committed, so that a build needs no Node)
//! and embedded in the binary: `GET /` is the page,
//! `/inbox.js` and `/inbox.css` its script and style. The page talks to
//! the agent service over gRPC-Web on this same port, with the API key a
//! person gives it; these routes serve files and nothing else, so they
//! need no key.

use axum::http::{header, HeaderValue};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

const INDEX: &[u8] = include_bytes!("../../web/dist/index.html");
const SCRIPT: &[u8] = include_bytes!("../../web/dist/inbox.js");
const STYLE: &[u8] = include_bytes!("../../web/dist/inbox.css");

/// What the page may load and call: only this origin (the icon is inline).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The inbox's routes.
pub(crate) fn routes() -> Router {
    Router::new()
        .route("/", get(|| async { asset(INDEX, "text/html; charset=utf-8") }))
        .route(
            "/index.html",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/inbox.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/inbox.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
}

/// One embedded file: revalidated on each load (a new server version
/// brings new files under the same names), never sniffed, never framed.
fn asset(body: &'static [u8], content_type: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (header::REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
        ],
        body,
    )
}

/// Where a browser on this machine opens the inbox of a server listening
/// on `address`: an unspecified address (`0.0.0.0`, `[::]`) is reached
/// through loopback.
pub(crate) fn url(address: std::net::SocketAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    let ip = match address.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("{scheme}://{}/", std::net::SocketAddr::new(ip, address.port()))
}

#[cfg(test)]
mod tests {
    use super::url;

    #[test]
    fn the_inbox_url_is_one_a_browser_here_opens() {
        let at = |address: &str, tls| url(address.parse().unwrap(), tls);
        assert_eq!(at("127.0.0.1:50051", false), "http://127.0.0.1:50051/");
        assert_eq!(at("0.0.0.0:8080", true), "https://127.0.0.1:8080/");
        assert_eq!(at("[::]:50051", false), "http://[::1]:50051/");
        assert_eq!(at("[2001:db8::1]:443", true), "https://[2001:db8::1]:443/");
    }
}
