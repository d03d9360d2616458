//! The front door, as an attacker's page and a careless client meet it:
//! a page of another origin in a real browser (`web/test/door.ts`) sends
//! `no-cors` POSTs to every JSON surface and nothing runs; a rebinding
//! `Host`, a foreign `Origin`, a body that is not JSON, a wrong key with a
//! malformed body, a body that trickles in, a body too large, unknown paths
//! and methods: each refused on each surface, in that surface's own shape,
//! with nothing run. Plain gRPC is not held to `Host`. The agent cards
//! name `public_url`, or an allowed host only.

use std::net::SocketAddr;
use std::time::Duration;

use agentd::config::PublicUrl;
use agentd::pb;
use prost::Message;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::transport::Endpoint;

use super::auth::{two_tenants, ACME_KEY};
use super::server::{keyed, SecureServer};
use crate::helpers::http;

/// How a surface says no.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    /// A JSON-RPC error object, id null (`/mcp`, `/a2a/jsonrpc`).
    JsonRpc,
    /// A `google.rpc.Status` body (`/a2a/rest`).
    Status,
    /// `{"error": {"code": "...", "message": "..."}}` (`/ag-ui`, the rest).
    Error,
    /// A gRPC status in the headers (gRPC-Web).
    Grpc,
}

/// One request a browser can make, valid but for what the test changes.
struct Probe {
    name: &'static str,
    method: reqwest::Method,
    path: &'static str,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    shape: Shape,
}

fn a2a_message() -> Value {
    json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "Help me pick a plan"}]}})
}

/// A gRPC-Web frame of `message`.
fn grpc_web_frame(message: &impl Message) -> Vec<u8> {
    let bytes = message.encode_to_vec();
    let mut frame = vec![0u8];
    frame.extend((bytes.len() as u32).to_be_bytes());
    frame.extend(bytes);
    frame
}

/// A request on each surface a browser can reach, each of which would
/// start a run (or a session) if let in.
fn probes() -> Vec<Probe> {
    let json = |value: Value| serde_json::to_vec(&value).unwrap();
    let post = reqwest::Method::POST;
    vec![
        Probe {
            name: "ag-ui",
            method: post.clone(),
            path: "/ag-ui",
            content_type: Some("application/json"),
            body: json(json!({"threadId": "t", "runId": "r",
                "messages": [{"id": "m", "role": "user", "content": "Help me pick a plan"}]})),
            shape: Shape::Error,
        },
        Probe {
            name: "a2a jsonrpc",
            method: post.clone(),
            path: "/a2a/jsonrpc",
            content_type: Some("application/json"),
            body: json(json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": a2a_message()})),
            shape: Shape::JsonRpc,
        },
        Probe {
            name: "a2a rest",
            method: post.clone(),
            path: "/a2a/rest/message:send",
            content_type: Some("application/json"),
            body: json(a2a_message()),
            shape: Shape::Status,
        },
        Probe {
            name: "mcp",
            method: post.clone(),
            path: "/mcp",
            content_type: Some("application/json"),
            body: json(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            ),
            shape: Shape::JsonRpc,
        },
        Probe {
            name: "grpc-web",
            method: post,
            path: "/agentd.v1.AgentService/StreamAgent",
            content_type: Some("application/grpc-web+proto"),
            body: grpc_web_frame(&pb::StreamAgentRequest {
                prompt: "Help me pick a plan".into(),
                ..Default::default()
            }),
            shape: Shape::Grpc,
        },
        Probe {
            name: "inbox",
            method: reqwest::Method::GET,
            path: "/",
            content_type: None,
            body: Vec::new(),
            shape: Shape::Error,
        },
        Probe {
            name: "agent card",
            method: reqwest::Method::GET,
            path: "/.well-known/agent-card.json",
            content_type: None,
            body: Vec::new(),
            shape: Shape::Error,
        },
    ]
}

/// The JSON surfaces among [`probes`].
fn json_probes() -> Vec<Probe> {
    probes()
        .into_iter()
        .filter(|probe| matches!(probe.name, "ag-ui" | "a2a jsonrpc" | "a2a rest" | "mcp"))
        .collect()
}

/// Sends `probe` to `addr` with `headers` (which may replace its
/// content type, or its Host).
async fn send(addr: SocketAddr, probe: &Probe, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = http()
        .request(probe.method.clone(), format!("http://{addr}{}", probe.path))
        .header("a2a-version", "1.0")
        .header("accept", "application/json, text/event-stream")
        .body(probe.body.clone());
    let replaced = headers.iter().any(|(name, _)| *name == "content-type");
    if let Some(content_type) = probe.content_type.filter(|_| !replaced) {
        request = request.header("content-type", content_type);
    }
    if probe.shape == Shape::Grpc {
        request = request.header("x-grpc-web", "1");
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("an answer")
}

/// Asserts that `response` refuses in `shape`: HTTP `status` (gRPC-Web:
/// the gRPC `grpc_code` in its headers), with `reason` (agentd's, or for
/// the `{"error": ...}` shape its code) where the shape carries one.
async fn assert_refused(
    name: &str,
    response: reqwest::Response,
    shape: Shape,
    (status, grpc_code, reason): (u16, i32, &str),
) {
    if shape == Shape::Grpc {
        assert_eq!(response.status(), 200, "{name}: gRPC-Web says it in grpc-status");
        let code = response
            .headers()
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(code, Some(grpc_code.to_string()), "{name}: {response:?}");
        return;
    }
    assert_eq!(response.status(), status, "{name}: {response:?}");
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("application/json"),
        "{name}: {content_type}"
    );
    let body: Value = response.json().await.expect("a JSON body");
    match shape {
        Shape::JsonRpc => {
            assert_eq!(body["jsonrpc"], "2.0", "{name}: {body}");
            assert_eq!(body["id"], Value::Null, "{name}: {body}");
            assert_eq!(body["error"]["code"], -32600, "{name}: {body}");
            assert!(body.to_string().contains(reason), "{name}: {reason} in {body}");
        }
        Shape::Status => {
            assert_eq!(body["error"]["code"], status, "{name}: {body}");
            let details = body["error"]["details"].as_array().expect("details");
            assert_eq!(details.last().unwrap()["reason"], reason, "{name}: {body}");
        }
        Shape::Error => {
            assert_eq!(body["error"]["code"], reason, "{name}: {body}");
            assert!(body["error"]["message"].as_str().is_some(), "{name}: {body}");
        }
        Shape::Grpc => unreachable!(),
    }
}

/// The runs the server holds, read over plain gRPC.
async fn runs(server: &SecureServer, key: Option<&str>) -> Vec<pb::Run> {
    let mut client = server.client(key).await;
    client
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("ListRuns")
        .into_inner()
        .runs
}

#[tokio::test]
async fn a_rebinding_host_is_refused_on_every_browser_surface() {
    let server = SecureServer::start(|_, _| {}).await;
    let rebound = format!("attacker.example:{}", server.addr.port());
    for probe in probes() {
        let response = send(server.addr, &probe, &[("host", &rebound)]).await;
        let shape_reason = match probe.shape {
            Shape::Error => "host_not_allowed",
            _ => "HOST_NOT_ALLOWED",
        };
        assert_refused(probe.name, response, probe.shape, (403, 7, shape_reason)).await;
    }
    assert!(runs(&server, None).await.is_empty(), "nothing ran");

    // Plain gRPC, which no browser can send, names any host it likes.
    let channel = Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .origin(format!("http://{rebound}").parse().unwrap())
        .connect()
        .await
        .expect("connect");
    let mut client = keyed(channel, None);
    let started = super::server::start(&mut client, super::server::prompt("plain hello")).await;
    assert!(started.is_ok(), "plain gRPC is served: {started:?}");
    // The names allowed by default are served to browsers.
    let page = http()
        .get(format!("http://{}/", server.addr))
        .header("host", format!("localhost:{}", server.addr.port()))
        .send()
        .await
        .expect("the inbox");
    assert_eq!(page.status(), 200);
}

#[tokio::test]
async fn allowed_hosts_replaces_the_defaults_and_its_former_name_still_works() {
    let server = SecureServer::start(|_, settings| {
        settings.server.mcp_allowed_hosts = Some("agents.example.com".into());
    })
    .await;
    let probe = &json_probes()[0];
    let allowed = send(server.addr, probe, &[("host", "agents.example.com")]).await;
    assert_eq!(allowed.status(), 200, "{allowed:?}");
    let loopback = send(server.addr, probe, &[("host", "127.0.0.1")]).await;
    assert_eq!(loopback.status(), 403, "the defaults are replaced");

    let server = SecureServer::start(|_, settings| {
        settings.server.allowed_hosts = Some("*".into());
        settings.server.mcp_allowed_hosts = Some("agents.example.com".into());
    })
    .await;
    let anywhere = send(server.addr, probe, &[("host", "attacker.example")]).await;
    assert_eq!(anywhere.status(), 200, "allowed_hosts wins over its former name");
}

#[tokio::test]
async fn a_foreign_origin_is_refused_on_every_surface() {
    let server = SecureServer::start(|_, _| {}).await;
    for probe in probes() {
        let response = send(server.addr, &probe, &[("origin", "http://evil.example.com")]).await;
        let reason = match probe.shape {
            Shape::Error => "origin_not_allowed",
            _ => "ORIGIN_NOT_ALLOWED",
        };
        assert_refused(probe.name, response, probe.shape, (403, 7, reason)).await;
        let null = send(server.addr, &probe, &[("origin", "null")]).await;
        assert_refused(probe.name, null, probe.shape, (403, 7, reason)).await;
    }
    assert!(runs(&server, None).await.is_empty(), "nothing ran");
    // A page this server served is its own origin.
    let own = format!("http://{}", server.addr);
    let probe = &json_probes()[0];
    assert_eq!(send(server.addr, probe, &[("origin", &own)]).await.status(), 200);
}

#[tokio::test]
async fn json_endpoints_refuse_other_content_types() {
    let server = SecureServer::start(|_, _| {}).await;
    for probe in json_probes() {
        for content_type in [
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            let response = send(server.addr, &probe, &[("content-type", content_type)]).await;
            let reason = match probe.shape {
                Shape::Error => "unsupported_media_type",
                _ => "UNSUPPORTED_MEDIA_TYPE",
            };
            assert_refused(probe.name, response, probe.shape, (415, 3, reason)).await;
        }
        // A body without a content type (a page's Blob) is no better.
        let untyped = Probe {
            content_type: None,
            ..probe
        };
        let response = send(server.addr, &untyped, &[]).await;
        assert_eq!(response.status(), 415, "{}: no content type", untyped.name);
    }
    assert!(runs(&server, None).await.is_empty(), "nothing ran");
}

#[tokio::test]
async fn a_wrong_key_is_refused_before_the_body_is_read() {
    let server = two_tenants().await;
    for probe in json_probes() {
        let malformed = Probe {
            body: b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ".to_vec(),
            ..probe
        };
        let response = send(server.addr, &malformed, &[("authorization", "Bearer not-a-key")]).await;
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer realm=\"agentd\", error=\"invalid_token\", error_description="),
            "{}: {challenge}",
            malformed.name
        );
        let reason = match malformed.shape {
            Shape::Error => "unauthenticated",
            _ => "INVALID_API_KEY",
        };
        assert_refused(malformed.name, response, malformed.shape, (401, 16, reason)).await;
    }
    assert!(runs(&server, Some(ACME_KEY)).await.is_empty(), "nothing ran");
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_in_each_shape() {
    let server = SecureServer::start(|_, settings| settings.limits.max_request_bytes = 1000).await;
    for probe in json_probes() {
        let mut big = probe;
        big.body.resize(5000, b' ');
        let response = send(server.addr, &big, &[]).await;
        let reason = match big.shape {
            Shape::Error => "request_too_large",
            _ => "REQUEST_TOO_LARGE",
        };
        assert_refused(big.name, response, big.shape, (413, 8, reason)).await;
    }
    assert!(runs(&server, None).await.is_empty(), "nothing ran");
}

/// Sends `head` and the start of a body of `length` bytes over HTTP/1.1,
/// then one byte every 100 ms; the whole answer, read until the server
/// closes the connection.
async fn trickle(addr: SocketAddr, head: &str, length: usize) -> String {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut read, mut write) = stream.into_split();
    let request = format!("{head}content-length: {length}\r\n\r\n{{");
    write.write_all(request.as_bytes()).await.expect("send");
    let writer = tokio::spawn(async move {
        for _ in 1..length {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if write.write_all(b" ").await.is_err() {
                return;
            }
        }
    });
    let mut answer = Vec::new();
    // Bounded only so that a server that never answers fails the test.
    tokio::time::timeout(Duration::from_secs(20), read.read_to_end(&mut answer))
        .await
        .expect("the server closes the connection")
        .expect("read");
    writer.abort();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_slow_body_is_cut_off() {
    let server = SecureServer::start(|_, settings| {
        settings.limits.request_body_timeout = Duration::from_millis(500);
    })
    .await;
    let host = format!("host: {}\r\n", server.addr);
    for (path, shape) in [
        ("/ag-ui", "\"code\":\"request_timeout\""),
        ("/a2a/jsonrpc", "\"code\":-32600"),
        ("/a2a/rest/message:send", "\"code\":408"),
        ("/mcp", "\"code\":-32600"),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\n{host}content-type: application/json\r\na2a-version: 1.0\r\n\
             accept: application/json, text/event-stream\r\n"
        );
        // 200 bytes at 10 a second would take 20 s.
        let answer = trickle(server.addr, &head, 200).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{path}: {answer}"
        );
        assert!(answer.contains(shape), "{path}: {shape} in {answer}");
        assert!(answer.contains("limits.request_body_timeout"), "{path}: {answer}");
    }
    assert!(runs(&server, None).await.is_empty(), "nothing ran");
}

/// The URLs of a card's interfaces.
fn interface_urls(card: &Value) -> Vec<String> {
    card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .map(|interface| interface["url"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn cards_name_the_public_url_or_an_allowed_host_only() {
    let server = SecureServer::start(|_, _| {}).await;
    let card = |host: String| {
        http()
            .get(format!("http://{}/.well-known/agent-card.json", server.addr))
            .header("host", host)
            .send()
    };
    let port = server.addr.port();
    let foreign = card(format!("cache-poison.example:{port}"))
        .await
        .expect("an answer");
    assert_eq!(foreign.status(), 403);
    let local: Value = card(format!("localhost:{port}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        interface_urls(&local),
        [
            format!("http://localhost:{port}/a2a/jsonrpc"),
            format!("http://localhost:{port}/a2a/rest"),
            format!("http://localhost:{port}"),
        ]
    );

    let public = SecureServer::start(|_, settings| {
        settings.server.public_url = Some(PublicUrl::parse("https://agents.example.com/agentd/").unwrap());
    })
    .await;
    for host in [public.addr.to_string(), "agents.example.com".to_owned()] {
        let card: Value = http()
            .get(format!(
                "http://{}/agents/assistant/.well-known/agent-card.json",
                public.addr
            ))
            .header("host", host)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            interface_urls(&card),
            [
                "https://agents.example.com/agentd/a2a/jsonrpc",
                "https://agents.example.com/agentd/a2a/rest",
                "https://agents.example.com/agentd",
            ]
        );
    }
    // Its origin is this server's own.
    let probe = &json_probes()[0];
    let from_public = send(public.addr, probe, &[("origin", "https://agents.example.com")]).await;
    assert_eq!(from_public.status(), 200);
}

#[tokio::test]
async fn unknown_paths_and_methods_are_answered_in_each_shape() {
    let server = SecureServer::start(|_, _| {}).await;
    let ask = |method: reqwest::Method, path: &str, content_type: Option<&str>| {
        let mut request = http()
            .request(method, format!("http://{}{path}", server.addr))
            .header("a2a-version", "1.0");
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type).body("{}");
        }
        request.send()
    };
    use reqwest::Method as M;
    let json = Some("application/json");
    for (method, path, content_type, shape, status, reason) in [
        (M::GET, "/nothing/here", None, Shape::Error, 404, "not_found"),
        (M::DELETE, "/", None, Shape::Error, 405, "method_not_allowed"),
        (
            M::GET,
            "/ag-ui/assistant/x/y",
            None,
            Shape::Error,
            404,
            "not_found",
        ),
        (M::PUT, "/ag-ui", json, Shape::Error, 405, "method_not_allowed"),
        (
            M::GET,
            "/a2a/jsonrpc",
            None,
            Shape::JsonRpc,
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            M::POST,
            "/a2a/jsonrpc/extra",
            json,
            Shape::JsonRpc,
            404,
            "NOT_FOUND",
        ),
        (M::PUT, "/mcp", json, Shape::JsonRpc, 405, "METHOD_NOT_ALLOWED"),
        (M::POST, "/mcp/extra", json, Shape::JsonRpc, 404, "NOT_FOUND"),
    ] {
        let response = ask(method.clone(), path, content_type).await.expect("an answer");
        assert_refused(&format!("{method} {path}"), response, shape, (status, 0, reason)).await;
    }
    // /a2a/rest names its unknown operations itself, in its shape.
    let rest = ask(M::PUT, "/a2a/rest/tasks", json).await.unwrap();
    assert_eq!(rest.status(), 404);
    let body: Value = rest.json().await.unwrap();
    assert_eq!(body["error"]["code"], 404, "{body}");
    // A gRPC-Web call to no service is UNIMPLEMENTED.
    let grpc = http()
        .post(format!("http://{}/no.Such/Service", server.addr))
        .header("content-type", "application/grpc-web+proto")
        .body(vec![0u8, 0, 0, 0, 0])
        .send()
        .await
        .unwrap();
    assert_refused("grpc-web", grpc, Shape::Grpc, (200, 12, "")).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs chromium and Node (apt-get install chromium; npm ci in web/); .ci/run runs it"]
async fn a_page_of_another_origin_runs_nothing_in_a_real_browser() {
    let server = SecureServer::start(|_, _| {}).await;
    let url = format!("http://{}", server.addr);
    // The page of another origin: another port of this host.
    let page = "<!doctype html><title>another site</title><p>nothing to see</p>";
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || async move { axum::response::Html(page) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let attacker = format!("http://{}/", listener.local_addr().expect("its address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    tokio::task::spawn_blocking(move || crate::web::node::run_script("door.ts", &[&url, &attacker]))
        .await
        .expect("the script's task");
    // The page of another origin ran nothing; the server's own page, its
    // one request.
    let runs = runs(&server, None).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].thread_id, "own");
}
