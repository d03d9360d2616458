//! CORS: off by default (a page from another origin gets no permission to
//! call), and `--cors-allow-origin` allows the origins it lists (or any,
//! with `*`), with the headers a gRPC-Web call sends and reads; the AG-UI
//! endpoint meets the same setting.

use agentd::config::AllowedOrigins;
use agentd::pb;
use prost::Message;

use crate::security::server::SecureServer;

const APP: &str = "https://app.example.com";
const OTHER: &str = "https://evil.example.net";

async fn server(origins: Option<&str>) -> SecureServer {
    let origins = origins.map(|text| AllowedOrigins::parse_list(text).expect("origins"));
    SecureServer::start(move |_, settings| settings.server.cors_allow_origin = origins).await
}

/// A browser's preflight for a gRPC-Web call with an API key from `origin`.
async fn preflight(server: &SecureServer, origin: &str) -> reqwest::Response {
    crate::helpers::http()
        .request(
            reqwest::Method::OPTIONS,
            format!("http://{}/agentd.v1.AgentService/ListRuns", server.addr),
        )
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,x-grpc-web,x-user-agent",
        )
        .send()
        .await
        .expect("an answer")
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).map(|value| value.to_str().unwrap())
}

#[tokio::test]
async fn ag_ui_meets_the_same_setting() {
    let server = server(Some(APP)).await;
    let ask = |origin: &'static str| {
        crate::helpers::http()
            .request(
                reqwest::Method::OPTIONS,
                format!("http://{}/ag-ui/assistant", server.addr),
            )
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "authorization,content-type")
            .send()
    };
    let allowed = ask(APP).await.expect("an answer");
    assert_eq!(header(&allowed, "access-control-allow-origin"), Some(APP));
    let refused = ask(OTHER).await.expect("an answer");
    assert_eq!(header(&refused, "access-control-allow-origin"), None);
}

#[tokio::test]
async fn without_the_setting_no_other_origin_is_allowed() {
    let server = server(None).await;
    let answer = preflight(&server, APP).await;
    assert_eq!(header(&answer, "access-control-allow-origin"), None);
    assert_eq!(header(&answer, "access-control-allow-headers"), None);
}

#[tokio::test]
async fn listed_origins_are_allowed_and_others_refused() {
    let server = server(Some(&format!("{APP}, http://localhost:5173"))).await;
    let allowed = preflight(&server, APP).await;
    assert!(allowed.status().is_success(), "{allowed:?}");
    assert_eq!(header(&allowed, "access-control-allow-origin"), Some(APP));
    // POST for calls; GET for the AG-UI capabilities, read with a key.
    assert_eq!(header(&allowed, "access-control-allow-methods"), Some("GET,POST"));
    let headers = header(&allowed, "access-control-allow-headers").expect("allowed headers");
    for name in [
        "authorization",
        "content-type",
        "x-grpc-web",
        "x-user-agent",
        "grpc-timeout",
    ] {
        assert!(headers.contains(name), "{name} in {headers}");
    }
    assert!(header(&allowed, "access-control-max-age").is_some());
    let local = preflight(&server, "http://localhost:5173").await;
    assert_eq!(
        header(&local, "access-control-allow-origin"),
        Some("http://localhost:5173")
    );

    let refused = preflight(&server, OTHER).await;
    assert_eq!(header(&refused, "access-control-allow-origin"), None);

    // The call itself, from the allowed origin: its status headers are
    // readable by the page.
    let mut body = vec![0u8, 0, 0, 0, 0];
    let request = pb::ListRunsRequest::default().encode_to_vec();
    body[1..5].copy_from_slice(&(request.len() as u32).to_be_bytes());
    body.extend(request);
    let call = crate::helpers::http()
        .post(format!("http://{}/agentd.v1.AgentService/ListRuns", server.addr))
        .header("origin", APP)
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(body)
        .send()
        .await
        .expect("an answer");
    assert_eq!(call.status(), 200);
    assert_eq!(header(&call, "access-control-allow-origin"), Some(APP));
    let exposed = header(&call, "access-control-expose-headers").expect("exposed headers");
    for name in ["grpc-status", "grpc-message", "grpc-status-details-bin"] {
        assert!(exposed.contains(name), "{name} in {exposed}");
    }
}

#[tokio::test]
async fn a_star_allows_every_origin() {
    let server = server(Some("*")).await;
    let answer = preflight(&server, OTHER).await;
    assert_eq!(header(&answer, "access-control-allow-origin"), Some("*"));
}
