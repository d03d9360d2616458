//! An MCP session answers only the key that opened it, over plain HTTP: a
//! session opened with acme's key `ada` is, to another tenant's key and to
//! another key of acme alike, a session that does not exist (404, as for
//! an unknown id): they can neither list nor call tools on it, answer its
//! pending elicitation, nor delete it or open its stream; and the session
//! goes on working for its owner, whose answer is the one recorded.

use agentd::pb;
use serde_json::{json, Value};

use super::auth::{ACME_KEY, GLOBEX_KEY};
use super::server::{keyed, SecureServer};
use super::sse::{post, Events};

/// Another key of acme, named `bob`.
const ACME_OTHER_KEY: &str = "acme-other-key-5c2b7e9d1f3a";

const VERSION: &str = "2025-11-25";

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

/// A client of one MCP session: its key and the id of the session.
struct Session {
    url: String,
    key: &'static str,
    id: String,
}

impl Session {
    /// Opens a session with `key`, as a client that answers elicitations.
    async fn open(url: &str, key: &'static str) -> Self {
        let initialize = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": VERSION,
                "capabilities": {"elicitation": {"form": {}}},
                "clientInfo": {"name": "sessions-test", "version": "1"},
            },
        });
        let response = post(url, Some(key), &[ACCEPT], &initialize).await;
        assert_eq!(response.status(), 200);
        let id = response
            .headers()
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_owned();
        let mut events = Events::of(response);
        let answer = events.next().await.expect("the initialize result");
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        let session = Self {
            url: url.to_owned(),
            key,
            id,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.send(&initialized).await.status(), 202);
        session
    }

    /// The same session, as `key` names it.
    fn as_key(&self, key: &'static str) -> Self {
        Self {
            url: self.url.clone(),
            key,
            id: self.id.clone(),
        }
    }

    /// A message on the session.
    async fn send(&self, message: &Value) -> reqwest::Response {
        let headers = [
            ACCEPT,
            ("mcp-session-id", self.id.as_str()),
            ("mcp-protocol-version", VERSION),
        ];
        post(&self.url, Some(self.key), &headers, message).await
    }

    /// A request on the session without a body (GET, DELETE).
    async fn bare(&self, method: reqwest::Method) -> reqwest::Response {
        crate::helpers::http()
            .request(method, &self.url)
            .bearer_auth(self.key)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", VERSION)
            .send()
            .await
            .expect("answered")
    }
}

fn tools_list(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

fn tools_call(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "assistant", "arguments": {"prompt": "Help me pick a plan"}},
    })
}

fn answer(elicitation: &Value, plan: &str) -> Value {
    json!({
        "jsonrpc": "2.0", "id": elicitation["id"],
        "result": {"action": "accept", "content": {"answer": plan}},
    })
}

/// The status and body of an answer.
async fn seen(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_only_the_key_that_opened_it() {
    let server = SecureServer::with_keys(&format!(
        "acme:{ACME_KEY} ada\nacme:{ACME_OTHER_KEY} bob\nglobex:{GLOBEX_KEY}\n"
    ))
    .await;
    let url = format!("http://{}/mcp", server.addr);
    let ada = Session::open(&url, ACME_KEY).await;
    let unknown = Session {
        id: "no-such-session".to_owned(),
        ..ada.as_key(ACME_KEY)
    };
    let not_found = seen(unknown.send(&tools_list(2)).await).await;
    assert_eq!(not_found.0, 404, "{not_found:?}");

    // A call waits in its elicitation.
    let calling = ada.send(&tools_call(3)).await;
    assert_eq!(calling.status(), 200);
    let mut call = Events::of(calling);
    let elicitation = call.until(|event| event["method"] == "elicitation/create").await;

    for other in [GLOBEX_KEY, ACME_OTHER_KEY] {
        let other = ada.as_key(other);
        assert_eq!(
            seen(other.send(&tools_list(4)).await).await,
            not_found,
            "tools/list"
        );
        assert_eq!(
            seen(other.send(&tools_call(5)).await).await,
            not_found,
            "tools/call"
        );
        let theirs = answer(&elicitation, "Basic");
        assert_eq!(seen(other.send(&theirs).await).await, not_found, "an answer");
        for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
            assert_eq!(
                seen(other.bare(method.clone()).await).await,
                not_found,
                "{method}"
            );
        }
        // Unknown sessions are the same to every key.
        let unknown = Session {
            id: "no-such-session".to_owned(),
            ..other
        };
        assert_eq!(seen(unknown.send(&tools_list(6)).await).await, not_found);
    }

    // The owner's session is as it was: its tools, its question.
    let listed = ada.send(&tools_list(7)).await;
    assert_eq!(listed.status(), 200);
    let tools = Events::of(listed).until(|event| event["id"] == 7).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|tool| tool["name"] == "assistant")),
        "{tools}"
    );
    assert_eq!(ada.send(&answer(&elicitation, "Enterprise")).await.status(), 202);
    let result = call.until(|event| event["id"] == 3).await;
    let run_id = result["result"]["structuredContent"]["runId"]
        .as_str()
        .unwrap_or_else(|| panic!("a run id in {result}"))
        .to_owned();

    // Answered once, as ada's.
    let mut acme = keyed(server.channel().await, Some(ACME_KEY));
    let run = acme
        .get_run(pb::GetRunRequest { run_id })
        .await
        .expect("GetRun")
        .into_inner();
    assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
    assert_eq!(run.decisions[0].decided_by, "ada");
    assert_eq!(run.decisions[0].source(), pb::DecisionSource::Mcp);

    // Only its owner closes it.
    assert_eq!(ada.bare(reqwest::Method::DELETE).await.status(), 202);
    assert_eq!(seen(ada.send(&tools_list(8)).await).await, not_found);
}
