//! agentd's agents as A2A agents, driven by the official A2A Python SDK
//! (`tests/a2a/a2a_client_test.py`: the card and its three interfaces; on
//! each binding, JSON-RPC, HTTP+JSON and gRPC, a single-select question
//! answered with text, an invalid answer refused as InvalidParamsError, a
//! multi-select one answered with a data part, cancel, resubscribe,
//! unknown tasks, another tenant's task, an approval remembered in its
//! context (a data part with `remember`), push notification configs and
//! their pushes, ListTasks' counts and filters; a task started over
//! JSON-RPC and answered over gRPC; what a request without `A2A-Version`
//! gets) against real servers: one open, one with API keys, and one whose
//! pushes may go to private addresses (the script's receiver listens on
//! 127.0.0.1). Without Python, the JSON bindings' shapes: the card, one task
//! over JSON-RPC and HTTP+JSON, their errors.

use std::net::SocketAddr;
use std::process::Command;

use agentd::pb;
use agentd::server::{self, ServeOptions};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::helpers::{settings_in, TestServer};
use crate::security::auth::{two_tenants, ACME_KEY, GLOBEX_KEY};

/// The Python with `a2a-sdk[grpc]` installed (`.ci/run` makes one).
const PYTHON: &str = "AGENTD_TEST_A2A_PYTHON";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs Python with a2a-sdk[grpc]: set AGENTD_TEST_A2A_PYTHON; .ci/run runs it"]
async fn the_a2a_python_sdk_drives_agentd() {
    let python = std::env::var(PYTHON)
        .unwrap_or_else(|_| panic!("{PYTHON} names a Python with a2a-sdk[grpc] installed"));
    // The embedded defaults' agents, and `careful`, whose ask_user calls
    // each wait for approval.
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    settings.agents.push(crate::helpers::careful());
    let open = TestServer::start_with(settings).await;
    let keyed = two_tenants().await;
    let push_dir = tempfile::tempdir().expect("temp dir");
    let push = pushing_to_private_addresses(push_dir.path()).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a/a2a_client_test.py");
    let (open_addr, keyed_addr) = (open.addr.to_string(), keyed.addr.to_string());
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .args(["--open", &open_addr, "--keyed", &keyed_addr])
            .args(["--acme-key", ACME_KEY, "--globex-key", GLOBEX_KEY])
            .args(["--push", &push.to_string()])
            .output()
            .expect("run the A2A client")
    })
    .await
    .expect("the client ran");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("\"result\": \"passed\""),
        "the A2A client failed:\n{stdout}\n{stderr}"
    );
    // Approved by the grant its context's earlier task made over A2A.
    let granted: Vec<&str> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("granted task: "))
        .collect();
    assert_eq!(granted.len(), 3, "one on each binding:\n{stdout}");
    for task in granted {
        crate::helpers::assert_granted_then_answered(&open, task, pb::DecisionSource::A2a).await;
    }
}

/// A server with `[a2a] push_allow_private` on, serving until the test
/// ends.
async fn pushing_to_private_addresses(dir: &std::path::Path) -> SocketAddr {
    let mut settings = settings_in(dir);
    settings.a2a.push_allow_private = true;
    let options = ServeOptions::from_settings(&settings).expect("options");
    assert!(options.a2a_push_allow_private);
    let runtime = server::build_runtime(&settings).await.expect("runtime");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        server::serve_with(listener, runtime, options, std::future::pending())
            .await
            .expect("server failed");
    });
    addr
}

/// POSTs `method` with `params` to the JSON-RPC binding; the response's
/// HTTP status and body.
async fn jsonrpc(addr: &str, version: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let mut request = crate::helpers::http()
        .post(format!("http://{addr}/a2a/jsonrpc"))
        .json(&json!({"jsonrpc": "2.0", "id": "call-1", "method": method, "params": params}));
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = request.send().await.expect("POST /a2a/jsonrpc");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON body"))
}

/// The ErrorInfo among `details`.
fn error_info(details: &Value) -> &Value {
    details
        .as_array()
        .and_then(|details| {
            details
                .iter()
                .find(|detail| detail["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        })
        .expect("an ErrorInfo")
}

/// Without Python: the card's three interfaces, a task started over
/// JSON-RPC, refused a wrong answer as invalid params (the details of
/// Resume kept), answered and read over HTTP+JSON; what a request without
/// `A2A-Version` gets.
#[tokio::test]
async fn the_json_bindings_serve_one_task() {
    let server = TestServer::start().await;
    let addr = server.addr.to_string();
    let card: Value = crate::helpers::http()
        .get(format!("http://{addr}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("the card")
        .json()
        .await
        .expect("JSON");
    let interfaces: Vec<(&str, &str)> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap_or_default(),
                i["url"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    let base = format!("http://{addr}");
    assert_eq!(
        interfaces,
        [
            ("JSONRPC", format!("{base}/a2a/jsonrpc").as_str()),
            ("HTTP+JSON", format!("{base}/a2a/rest").as_str()),
            ("GRPC", base.as_str()),
        ]
    );

    let message = |text: &str, task_id: &str| {
        json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                           "taskId": task_id, "parts": [{"text": text}]}})
    };
    let (status, body) = jsonrpc(
        &addr,
        Some("1.0"),
        "SendMessage",
        message("Help me pick a plan", ""),
    )
    .await;
    assert_eq!((status, &body["id"]), (200, &json!("call-1")), "{body}");
    let task = &body["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{body}");
    let task_id = task["id"].as_str().expect("a task id").to_owned();

    let (status, body) = jsonrpc(&addr, Some("1.0"), "SendMessage", message("Gold", &task_id)).await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32602, "{body}");
    let info = error_info(&body["error"]["data"]);
    assert_eq!(info["reason"], "INVALID_PARAMS");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert_eq!(info["metadata"]["agentdReason"], "INVALID_ANSWER");
    assert!(
        info["metadata"]["valid_labels"]
            .as_str()
            .is_some_and(|labels| labels.contains("Pro")),
        "{info}"
    );

    let rest = |path: &str| format!("http://{addr}/a2a/rest/assistant/{path}");
    let answered: Value = crate::helpers::http()
        .post(rest("message:send"))
        .header("A2A-Version", "1.0")
        .json(&message("Pro", &task_id))
        .send()
        .await
        .expect("message:send")
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        answered["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
    let run = server.get_run(&task_id).await;
    assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
    assert_eq!(run.decisions[0].source(), agentd::pb::DecisionSource::A2a);
    let unknown = crate::helpers::http()
        .get(rest(&format!("tasks/{}", uuid::Uuid::new_v4())))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("GET tasks/ID");
    assert_eq!(unknown.status(), 404);
    let body: Value = unknown.json().await.expect("JSON");
    assert_eq!(
        error_info(&body["error"]["details"])["reason"],
        "TASK_NOT_FOUND",
        "{body}"
    );

    let (status, body) = jsonrpc(&addr, None, "GetTask", json!({"id": task_id})).await;
    assert_eq!((status, &body["error"]["code"]), (200, &json!(-32009)), "{body}");
}
