//! The HTTP surfaces in the Prometheus endpoint, beside the gRPC ones:
//! after requests on each surface (the agent card, the inbox, A2A's
//! JSON-RPC and HTTP+JSON bindings, AG-UI, MCP), a scrape counts each by
//! its surface and status code, refusals included; every surface's open
//! streams are there from the start at zero, and an open `/ag-ui` stream
//! counts while it lasts.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::metrics::{assert_series, scrape, start, value};
use crate::security::sse::{post, Events};

fn requests(surface: &str, code: u16) -> String {
    format!("agentd_http_requests_total{{code=\"{code}\",surface=\"{surface}\"}}")
}

fn open_streams(surface: &str) -> String {
    format!("agentd_open_streams{{surface=\"{surface}\"}}")
}

fn ag_ui_input(thread: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": "r", "messages": [{"id": "m", "role": "user", "content": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_http_surface_is_counted_as_itself() {
    let temp = tempfile::tempdir().expect("temp dir");
    let server = start(temp.path()).await;
    let base = format!("http://{}", server.addr);
    let text = scrape(server.metrics).await;
    for surface in ["mcp", "ag_ui", "a2a_jsonrpc", "a2a_rest", "inbox", "agent_card"] {
        assert_series(&text, &open_streams(surface), 0.0);
    }

    let http = crate::helpers::http();
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header("A2A-Version", "1.0")
            .send()
    };
    assert_eq!(get("/.well-known/agent-card.json").await.unwrap().status(), 200);
    assert_eq!(get("/").await.unwrap().status(), 200);
    let unknown_task = format!("/a2a/rest/tasks/{}", uuid::Uuid::new_v4());
    assert_eq!(get(&unknown_task).await.unwrap().status(), 404);
    let a2a = [("A2A-Version", "1.0")];
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let listed = post(&format!("{base}/a2a/jsonrpc"), None, &a2a, &list).await;
    assert_eq!(listed.status(), 200);
    let ag_ui = format!("{base}/ag-ui");
    let accept = [("accept", "text/event-stream")];
    let ran = post(&ag_ui, None, &accept, &ag_ui_input("t", "plain hello")).await;
    assert_eq!(ran.status(), 200);
    ran.text().await.expect("the run's events");
    let bad = post(&ag_ui, None, &accept, &json!({"runId": "r"})).await;
    assert_eq!(bad.status(), 400);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "metrics-test", "version": "1"}}});
    let mcp_accept = [("accept", "application/json, text/event-stream")];
    let opened = post(&format!("{base}/mcp"), None, &mcp_accept, &initialize).await;
    assert_eq!(opened.status(), 200);
    opened.text().await.expect("the initialize result");
    let unknown_session = [("mcp-session-id", "no-such-session"), mcp_accept[0]];
    let gone = post(&format!("{base}/mcp"), None, &unknown_session, &initialize).await;
    assert_eq!(gone.status(), 404);

    // The door's refusals count under the surface refused.
    let plain = http
        .post(&ag_ui)
        .header("content-type", "text/plain")
        .body(ag_ui_input("t", "plain hello").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 415);
    let rebound = [("host", "rebound.example"), a2a[0]];
    let foreign = post(&format!("{base}/a2a/jsonrpc"), None, &rebound, &list).await;
    assert_eq!(foreign.status(), 403);

    // An open stream counts while it lasts.
    let slow = post(
        &ag_ui,
        None,
        &accept,
        &ag_ui_input("slow", "stream 100000 every 100 ms"),
    )
    .await;
    let mut slow = Events::of(slow);
    slow.next().await.expect("an event");
    let text = scrape(server.metrics).await;
    for (surface, code, count) in [
        ("agent_card", 200, 1.0),
        ("inbox", 200, 1.0),
        ("a2a_rest", 404, 1.0),
        ("a2a_jsonrpc", 200, 1.0),
        ("a2a_jsonrpc", 403, 1.0),
        ("ag_ui", 200, 2.0),
        ("ag_ui", 400, 1.0),
        ("ag_ui", 415, 1.0),
        ("mcp", 200, 1.0),
        ("mcp", 404, 1.0),
    ] {
        assert_series(&text, &requests(surface, code), count);
    }
    assert_series(&text, &open_streams("ag_ui"), 1.0);
    assert_series(&text, &open_streams("mcp"), 0.0);

    drop(slow);
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let text = scrape(server.metrics).await;
        if value(&text, &open_streams("ag_ui")) == Some(0.0) {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "the stream never stopped counting:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
