//! `limits.max_streams_per_tenant` on every surface: with acme's two
//! streams open (a gRPC WatchRuns, an `/ag-ui` run), acme's next stream
//! is refused before anything runs on gRPC (RESOURCE_EXHAUSTED, reason
//! `TOO_MANY_STREAMS`), A2A JSON-RPC (429, a JSON-RPC error), A2A
//! HTTP+JSON (429, `{"error": …}`), AG-UI (429, `{"error": …}`) and MCP
//! (429, a JSON-RPC error answering the request), each naming the limit;
//! globex is admitted everywhere; a stream that ends frees its place. An
//! MCP tool call's stream holds a place while its run goes on.

use std::time::{Duration, Instant};

use agentd::limits::Limits;
use agentd::pb;
use serde_json::{json, Value};
use tonic::Code;
use tonic_types::StatusExt;

use super::auth::{ACME_KEY, GLOBEX_KEY};
use super::server::{prompt, write_file, KeyedClient, SecureServer};
use super::sse::{post, Events};

/// What names the limit in every refusal.
const LIMIT: &str = "limits.max_streams_per_tenant";

/// A run that streams a delta every 100 ms for hours: its stream stays
/// open as long as the test wants.
const SLOW: &str = "stream 100000 every 100 ms";

/// A server whose tenants acme and globex may each have `max` streams open.
async fn capped(max: usize) -> SecureServer {
    SecureServer::start(move |dir, settings| {
        let keys = format!("acme:{ACME_KEY}\nglobex:{GLOBEX_KEY}\n");
        settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &keys));
        settings.limits = Limits {
            max_streams_per_tenant: max,
            ..Limits::default()
        };
    })
    .await
}

fn ag_ui_input(thread: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": "r", "messages": [{"id": "m", "role": "user", "content": text}]})
}

fn a2a_message(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                       "parts": [{"text": text}]}})
}

const A2A_VERSION: (&str, &str) = ("A2A-Version", "1.0");
const MCP_ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn mcp_initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "caps-test", "version": "1"}}})
}

/// The HTTP surfaces, as the tests name them.
const SURFACES: [&str; 4] = ["a2a_jsonrpc", "a2a_rest", "ag_ui", "mcp"];

/// A new stream of `surface`, as `key`.
async fn http_stream(server: &SecureServer, key: &str, surface: &str) -> reqwest::Response {
    let base = format!("http://{}", server.addr);
    match surface {
        "a2a_jsonrpc" => {
            let request = json!({"jsonrpc": "2.0", "id": "s-1", "method": "SendStreamingMessage",
                                 "params": a2a_message("plain hello")});
            post(
                &format!("{base}/a2a/jsonrpc"),
                Some(key),
                &[A2A_VERSION],
                &request,
            )
            .await
        }
        "a2a_rest" => {
            let url = format!("{base}/a2a/rest/message:stream");
            post(&url, Some(key), &[A2A_VERSION], &a2a_message("plain hello")).await
        }
        "ag_ui" => {
            let input = ag_ui_input(&uuid::Uuid::new_v4().to_string(), "plain hello");
            post(
                &format!("{base}/ag-ui"),
                Some(key),
                &[("accept", "text/event-stream")],
                &input,
            )
            .await
        }
        "mcp" => {
            post(
                &format!("{base}/mcp"),
                Some(key),
                &[MCP_ACCEPT],
                &mcp_initialize(),
            )
            .await
        }
        other => panic!("no surface {other}"),
    }
}

/// Asserts the refusal of `surface` in its own shape, naming the limit
/// (and, on the JSON-RPC surfaces, answering the request `id`).
async fn assert_refused(surface: &str, response: reqwest::Response, id: &Value) {
    assert_eq!(response.status(), 429, "{surface}");
    let body: Value = response.json().await.expect("a JSON body");
    let message = match surface {
        "a2a_jsonrpc" | "mcp" => {
            assert_eq!(body["jsonrpc"], "2.0", "{surface}: {body}");
            assert_eq!(&body["id"], id, "{surface}: {body}");
            &body["error"]["message"]
        }
        "a2a_rest" => {
            assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED", "{body}");
            let reasons: Vec<&Value> = body["error"]["details"]
                .as_array()
                .expect("details")
                .iter()
                .map(|detail| &detail["reason"])
                .collect();
            assert!(reasons.contains(&&json!("TOO_MANY_STREAMS")), "{body}");
            &body["error"]["message"]
        }
        "ag_ui" => {
            assert_eq!(body["error"]["code"], "too_many_streams", "{body}");
            &body["error"]["message"]
        }
        other => panic!("no surface {other}"),
    };
    assert!(
        message.as_str().is_some_and(|message| message.contains(LIMIT)),
        "{surface}: {body}"
    );
}

/// The runs `client`'s tenant has.
async fn runs(client: &mut KeyedClient) -> usize {
    client
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("ListRuns")
        .into_inner()
        .runs
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_past_its_streams_is_refused_on_every_surface() {
    let server = capped(2).await;
    let mut acme = server.client(Some(ACME_KEY)).await;
    let mut globex = server.client(Some(GLOBEX_KEY)).await;
    let base = format!("http://{}", server.addr);

    // acme's two streams: a watch, and a run over AG-UI.
    let watching = acme
        .watch_runs(pb::WatchRunsRequest::default())
        .await
        .expect("the first stream")
        .into_inner();
    let running = post(
        &format!("{base}/ag-ui"),
        Some(ACME_KEY),
        &[("accept", "text/event-stream")],
        &ag_ui_input("slow", SLOW),
    )
    .await;
    assert_eq!(running.status(), 200, "the second stream");
    let mut running = Events::of(running);
    let started = running.next().await.expect("an event");
    assert_eq!(started["type"], "RUN_STARTED", "{started}");
    let before = runs(&mut acme).await;

    // The third: refused on gRPC ...
    let refused = acme.stream_agent(prompt("plain hello")).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(refused.message().contains(LIMIT), "{refused:?}");
    let info = refused.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.reason, "TOO_MANY_STREAMS");
    assert_eq!(info.metadata.get("max").map(String::as_str), Some("2"));
    assert!(refused.get_details_quota_failure().is_some(), "{refused:?}");
    let refused = acme
        .watch_runs(pb::WatchRunsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    // ... and on each HTTP surface, in its own words.
    for surface in SURFACES {
        let id = if surface == "mcp" { json!(7) } else { json!("s-1") };
        assert_refused(surface, http_stream(&server, ACME_KEY, surface).await, &id).await;
    }
    assert_eq!(runs(&mut acme).await, before, "nothing ran");

    // globex has places of its own.
    let theirs = globex
        .watch_runs(pb::WatchRunsRequest::default())
        .await
        .expect("globex is not held back by acme");
    drop(theirs);
    for surface in SURFACES {
        let response = http_stream(&server, GLOBEX_KEY, surface).await;
        assert_eq!(response.status(), 200, "{surface} for globex");
        response.text().await.expect("the stream to its end");
    }

    // Once acme's watch ends, acme may open another stream.
    drop(watching);
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        match acme.watch_runs(pb::WatchRunsRequest::default()).await {
            Ok(_) => break,
            Err(status) if status.code() == Code::ResourceExhausted && Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(status) => panic!("the place was never given back: {status:?}"),
        }
    }
    drop(running);
}

/// An MCP tool call's response stream holds its place while its run goes
/// on, on the same cap as every other surface.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_holds_a_place_while_its_run_goes_on() {
    let server = capped(1).await;
    let url = format!("http://{}/mcp", server.addr);
    let mut acme = server.client(Some(ACME_KEY)).await;
    let opened = post(&url, Some(ACME_KEY), &[MCP_ACCEPT], &mcp_initialize()).await;
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    Events::of(opened).next().await.expect("the initialize result");
    let headers = [
        MCP_ACCEPT,
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        post(&url, Some(ACME_KEY), &headers, &initialized).await.status(),
        202
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "assistant", "arguments": {"prompt": SLOW}}});
    // The initialize stream's place is given back as it ends.
    let give_up = Instant::now() + Duration::from_secs(20);
    let calling = loop {
        let response = post(&url, Some(ACME_KEY), &headers, &call).await;
        if response.status() != 429 || Instant::now() > give_up {
            break response;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(calling.status(), 200);

    let refused = acme
        .watch_runs(pb::WatchRunsRequest::default())
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let listed = post(&url, Some(ACME_KEY), &headers, &list).await;
    assert_refused("mcp", listed, &json!(3)).await;
    drop(calling);
}
