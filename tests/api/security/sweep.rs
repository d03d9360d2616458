//! Every refusal in the protocol's own words, surface by surface: a table
//! of malformed requests per JSON surface (`/mcp`, `/a2a/jsonrpc`,
//! `/a2a/rest`, `/ag-ui`), each sent over raw HTTP with a proper
//! `Content-Type: application/json` and a valid key: not JSON, JSON of the
//! wrong shape, wrong types, a field the schema does not allow, too deep,
//! too large. Each gets the status its binding says, and its protocol's
//! error shape (a JSON-RPC error object with the right code, or
//! `{"error": {"code", "message"}}`); never a 5xx, never plain text. An
//! approval whose payload misspells a field is refused naming it on
//! AG-UI and both A2A bindings, and the run is left as it was.

use agentd::agent::{AgentSpec, ToolEntry};
use agentd::limits::Limits;
use agentd::pb;
use serde_json::{json, Value};

use super::auth::ACME_KEY;
use super::server::{write_file, SecureServer};
use crate::helpers::http;

/// A case of a JSON-RPC surface: its name, the body, the status, error
/// code and id expected, and what the message says.
type RpcCase = (&'static str, Vec<u8>, (u16, i64, Value), &'static str);

/// A case of a `{"error": ...}` surface: its name, the body, the status
/// and `code` expected, and what the message says.
type ErrorCase = (&'static str, Vec<u8>, (u16, Value), &'static str);

/// The size limit of the sweep's server.
const MAX_BODY: usize = 64 * 1024;

/// A server with acme's key, a small size limit, and the default agent
/// `assistant` whose `human_review` waits for approval.
async fn server() -> SecureServer {
    SecureServer::start(|dir, settings| {
        settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &format!("acme:{ACME_KEY}\n")));
        settings.limits = Limits {
            max_request_bytes: MAX_BODY,
            ..Limits::default()
        };
        let mut assistant = AgentSpec::assistant();
        assistant.tools = vec![
            ToolEntry::name("ask_user"),
            ToolEntry::with_approval("human_review"),
        ];
        settings.agents = vec![assistant];
    })
    .await
}

/// An answer: its status and JSON body. Asserts what every refusal must
/// be: JSON (never plain text), and no 5xx.
async fn send(server: &SecureServer, method: reqwest::Method, path: &str, body: Vec<u8>) -> (u16, Value) {
    let response = http()
        .request(method, format!("http://{}{path}", server.addr))
        .bearer_auth(ACME_KEY)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("a2a-version", "1.0")
        .body(body)
        .send()
        .await
        .expect("a response");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = response.text().await.expect("a body");
    assert!(status < 500, "{path}: {status} {text}");
    assert!(
        content_type.starts_with("application/json"),
        "{path}: {status} is {content_type:?}, not JSON: {text}"
    );
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path}: not JSON: {text}"));
    (status, body)
}

async fn post(server: &SecureServer, path: &str, body: impl Into<Vec<u8>>) -> (u16, Value) {
    send(server, reqwest::Method::POST, path, body.into()).await
}

/// `levels` objects nested inside one another.
fn nested(levels: usize) -> Value {
    (0..levels).fold(json!({}), |inner, _| json!({ "a": inner }))
}

/// A JSON body larger than the limit.
fn too_large() -> Vec<u8> {
    serde_json::to_vec(&json!({"padding": "x".repeat(MAX_BODY + 1)})).unwrap()
}

/// An A2A message with `text`, and what else `extra` adds.
fn a2a_message(text: &str, extra: Value) -> Value {
    let mut message = json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                             "parts": [{"text": text}]});
    if let (Value::Object(message), Value::Object(extra)) = (&mut message, extra) {
        message.extend(extra);
    }
    message
}

fn jsonrpc(method: &str, params: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": "call-1", "method": method, "params": params}))
        .unwrap()
}

/// Asserts a JSON-RPC error: `status`, `code`, `id`, and a message that
/// contains `says`.
fn assert_jsonrpc(case: &str, (status, body): &(u16, Value), expected: (u16, i64, Value), says: &str) {
    let (expected_status, code, id) = expected;
    assert_eq!(*status, expected_status, "{case}: {body}");
    assert_eq!(body["jsonrpc"], "2.0", "{case}: {body}");
    assert_eq!(body["error"]["code"], code, "{case}: {body}");
    assert_eq!(body["id"], id, "{case}: {body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{case}: {message:?} says {says:?}");
}

/// Asserts a `{"error": {"code", "message"}}` refusal: `status`, `code`
/// (a number on A2A, a name on AG-UI), a message that contains `says`.
fn assert_error(case: &str, (status, body): &(u16, Value), expected: (u16, Value), says: &str) {
    assert_eq!(*status, expected.0, "{case}: {body}");
    assert_eq!(body["error"]["code"], expected.1, "{case}: {body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{case}: {message:?} says {says:?}");
}

#[tokio::test]
async fn mcp_answers_every_malformed_request_with_a_json_rpc_error() {
    let server = server().await;
    let null = Value::Null;
    let cases: Vec<RpcCase> = vec![
        (
            "not JSON",
            b"{not json".to_vec(),
            (400, -32700, null.clone()),
            "Parse error",
        ),
        ("a batch", b"[]".to_vec(), (400, -32600, null.clone()), "batch"),
        (
            "a string",
            b"\"ping\"".to_vec(),
            (400, -32600, null.clone()),
            "object",
        ),
        (
            "not JSON-RPC 2.0",
            br#"{"jsonrpc": "1.0", "id": 7, "method": "ping"}"#.to_vec(),
            (400, -32600, json!(7)),
            "jsonrpc",
        ),
        (
            "an id of the wrong type",
            br#"{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}"#.to_vec(),
            (400, -32600, null.clone()),
            "\"id\"",
        ),
        (
            "a method of the wrong type",
            br#"{"jsonrpc": "2.0", "id": 1, "method": 5}"#.to_vec(),
            (400, -32600, json!(1)),
            "\"method\"",
        ),
        (
            "tools/call with a name of the wrong type",
            jsonrpc("tools/call", json!({"name": 3})),
            (200, -32602, json!("call-1")),
            "params.name: invalid type",
        ),
        (
            "tools/call with params of the wrong type",
            jsonrpc("tools/call", json!("assistant")),
            (200, -32602, json!("call-1")),
            "params",
        ),
        (
            "tools/call with arguments of the wrong type",
            jsonrpc("tools/call", json!({"name": "assistant", "arguments": ["x"]})),
            (200, -32602, json!("call-1")),
            "params.arguments",
        ),
        (
            "initialize with a protocol version of the wrong type",
            jsonrpc(
                "initialize",
                json!({"protocolVersion": 5, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
            ),
            (200, -32602, json!("call-1")),
            "params.protocolVersion",
        ),
        (
            "too deep",
            format!("{}{}", "[".repeat(300), "]".repeat(300)).into_bytes(),
            (400, -32600, null.clone()),
            "deeper",
        ),
        (
            "too large",
            too_large(),
            (413, -32600, null.clone()),
            "limits.max_request_bytes",
        ),
    ];
    for (case, body, expected, says) in cases {
        let answer = post(&server, "/mcp", body).await;
        assert_jsonrpc(case, &answer, expected, says);
    }
}

#[tokio::test]
async fn a2a_json_rpc_answers_every_malformed_request_with_a_json_rpc_error() {
    let server = server().await;
    let id = json!("call-1");
    let cases: Vec<RpcCase> = vec![
        ("not JSON", b"{not json".to_vec(), (400, -32700, Value::Null), ""),
        ("an array", b"[1]".to_vec(), (400, -32600, Value::Null), ""),
        (
            "no method",
            br#"{"jsonrpc": "2.0", "id": "call-1"}"#.to_vec(),
            (400, -32600, id.clone()),
            "",
        ),
        (
            "a message of the wrong type",
            jsonrpc("SendMessage", json!({"message": 5})),
            (200, -32602, id.clone()),
            "",
        ),
        (
            "metadata nested 40 levels deep",
            jsonrpc(
                "SendMessage",
                json!({"message": a2a_message("hello", json!({"metadata": nested(40)}))}),
            ),
            (200, -32602, id.clone()),
            "message.metadata nests deeper",
        ),
        (
            "an unknown method",
            jsonrpc("FlyToTheMoon", json!({})),
            (200, -32601, id.clone()),
            "",
        ),
        (
            "too large",
            too_large(),
            (413, -32600, Value::Null),
            "limits.max_request_bytes",
        ),
    ];
    for (case, body, expected, says) in cases {
        let answer = post(&server, "/a2a/jsonrpc", body).await;
        assert_jsonrpc(case, &answer, expected, says);
    }
}

#[tokio::test]
async fn a2a_http_json_answers_every_malformed_request_with_an_error_object() {
    let server = server().await;
    let send_path = "/a2a/rest/message:send";
    let cases: Vec<ErrorCase> = vec![
        ("not JSON", b"{not json".to_vec(), (400, json!(400)), ""),
        ("an array", b"[1, 2]".to_vec(), (400, json!(400)), "object"),
        (
            "a message of the wrong type",
            serde_json::to_vec(&json!({"message": 5})).unwrap(),
            (400, json!(400)),
            "",
        ),
        (
            "metadata nested 40 levels deep",
            serde_json::to_vec(&json!({"message": a2a_message("hello", json!({"metadata": nested(40)}))}))
                .unwrap(),
            (400, json!(400)),
            "message.metadata nests deeper",
        ),
        (
            "too large",
            too_large(),
            (413, json!(413)),
            "limits.max_request_bytes",
        ),
    ];
    for (case, body, expected, says) in cases {
        let answer = post(&server, send_path, body).await;
        assert_error(case, &answer, expected, says);
    }
    let deep = post(
        &server,
        send_path,
        serde_json::to_vec(&json!({"message": a2a_message("hello", json!({"metadata": nested(40)}))}))
            .unwrap(),
    )
    .await;
    let violations: Vec<&Value> = deep.1["error"]["details"]
        .as_array()
        .expect("details")
        .iter()
        .filter_map(|detail| detail["fieldViolations"].as_array())
        .flatten()
        .collect();
    assert_eq!(violations[0]["field"], "message.metadata", "{}", deep.1);
    let unknown = send(
        &server,
        reqwest::Method::POST,
        "/a2a/rest/tasks/x:fly",
        Vec::new(),
    )
    .await;
    assert_error("an unknown operation", &unknown, (404, json!(404)), "");
}

#[tokio::test]
async fn ag_ui_answers_every_malformed_request_with_an_error_object() {
    let server = server().await;
    let cases: Vec<ErrorCase> = vec![
        (
            "not JSON",
            b"{not json".to_vec(),
            (400, json!("invalid_body")),
            "not JSON",
        ),
        (
            "an array",
            b"[]".to_vec(),
            (400, json!("invalid_body")),
            "RunAgentInput",
        ),
        (
            "content of the wrong type",
            serde_json::to_vec(&json!({"threadId": "t", "runId": "r",
                "messages": [{"id": "m", "role": "user", "content": 3}]}))
            .unwrap(),
            (400, json!("invalid_body")),
            "messages[0].content",
        ),
        (
            "too deep",
            format!("{}{}", "[".repeat(300), "]".repeat(300)).into_bytes(),
            (400, json!("invalid_body")),
            "recursion limit",
        ),
        (
            "too large",
            too_large(),
            (413, json!("request_too_large")),
            "limits.max_request_bytes",
        ),
    ];
    for (case, body, expected, says) in cases {
        let answer = post(&server, "/ag-ui", body).await;
        assert_error(case, &answer, expected, says);
    }
    let unknown = post(
        &server,
        "/ag-ui/nobody",
        serde_json::to_vec(&json!({"threadId": "t", "runId": "r", "messages": []})).unwrap(),
    )
    .await;
    assert_error("an unknown agent", &unknown, (404, json!("not_found")), "");
}

/// The run `id` as GetRun shows it.
async fn run_of(server: &SecureServer, id: &str) -> pb::Run {
    server
        .client(Some(ACME_KEY))
        .await
        .get_run(pb::GetRunRequest { run_id: id.into() })
        .await
        .expect("GetRun")
        .into_inner()
}

const REVIEW: &str = r#"call human_review {"draft": "Dear customer"}"#;

/// An approval misspelling `editedArgs` (`edited_args`), whose schema
/// allows no other field: refused naming the field, on AG-UI, A2A JSON-RPC
/// and A2A HTTP+JSON, and the run stays exactly as it was.
#[tokio::test]
async fn an_approval_with_a_misspelled_field_is_refused_and_changes_nothing() {
    let server = server().await;
    let misspelled = json!({"approved": true, "edited_args": {"draft": "Dear valued customer"}});

    // AG-UI: the interrupt's responseSchema allows no other property.
    let start = json!({"threadId": "review", "runId": "r1",
                       "messages": [{"id": "m1", "role": "user", "content": REVIEW}]});
    let response = http()
        .post(format!("http://{}/ag-ui", server.addr))
        .bearer_auth(ACME_KEY)
        .json(&start)
        .send()
        .await
        .expect("POST /ag-ui");
    let stream = response.text().await.expect("the events");
    let finished: Value = stream
        .split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .last()
        .map(|data| serde_json::from_str(data).expect("an event"))
        .expect("events");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "tool_approval", "{finished}");
    assert_eq!(interrupt["responseSchema"]["additionalProperties"], false);
    let run_id = finished["runId"].as_str().expect("a run").to_owned();
    let before = run_of(&server, &run_id).await;
    let resume = json!({"threadId": "review", "runId": "r2", "messages": [],
        "resume": [{"interruptId": interrupt["id"], "status": "resolved", "payload": misspelled}]});
    let refused = post(&server, "/ag-ui", serde_json::to_vec(&resume).unwrap()).await;
    assert_error(
        "AG-UI",
        &refused,
        (400, json!("invalid_answer")),
        "did you mean editedArgs?",
    );
    assert_eq!(refused.1["error"]["field"], "resume[0].payload.edited_args");
    assert_eq!(run_of(&server, &run_id).await, before, "the run is unchanged");

    // A2A, both JSON bindings.
    let started = post(
        &server,
        "/a2a/jsonrpc",
        jsonrpc("SendMessage", json!({"message": a2a_message(REVIEW, json!({}))})),
    )
    .await;
    let task_id = started.1["result"]["task"]["id"]
        .as_str()
        .expect("a task")
        .to_owned();
    let before = run_of(&server, &task_id).await;
    assert_eq!(before.status(), pb::RunStatus::Suspended);
    let answer = json!({"message": {"messageId": "answer-1", "role": "ROLE_USER", "taskId": task_id,
                                    "parts": [{"data": {"approval": misspelled}}]}});
    let refused = post(&server, "/a2a/jsonrpc", jsonrpc("SendMessage", answer.clone())).await;
    assert_jsonrpc(
        "A2A JSON-RPC",
        &refused,
        (200, -32602, json!("call-1")),
        "approval.edited_args is not allowed (did you mean editedArgs?)",
    );
    let refused = post(
        &server,
        "/a2a/rest/message:send",
        serde_json::to_vec(&answer).unwrap(),
    )
    .await;
    assert_error(
        "A2A HTTP+JSON",
        &refused,
        (400, json!(400)),
        "approval.edited_args is not allowed",
    );
    assert_eq!(run_of(&server, &task_id).await, before, "the task is unchanged");
}
