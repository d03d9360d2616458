//! agentd's agents for AG-UI frontends at `/ag-ui`: refusals before any
//! event over plain HTTP (401 without a key, 400 naming the field or the
//! interrupt, 409 for an interrupt answered through gRPC first), a question
//! asked over gRPC answered over AG-UI, and the
//! official AG-UI client (`tests/ag_ui/run.mjs`: `@ag-ui/client`'s
//! HttpAgent, `@ag-ui/core`'s schemas, ajv for each interrupt's
//! `responseSchema`) driving every scenario of the surface, one question of
//! which this test answers through gRPC while the client waits.

use std::process::Stdio;

use agentd::agent::{AgentSpec, ToolEntry};
use agentd::pb;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::helpers::{collect, http, resume_request};
use crate::security::auth::{ACME_KEY, GLOBEX_KEY};
use crate::security::server::{write_file, SecureServer};

/// The folder of `tests/ag_ui` with its packages installed (`npm ci`;
/// `.ci/run` does it).
const CLIENT: &str = "AGENTD_TEST_AG_UI";

/// The folder of `tests/copilotkit` with its packages installed (`npm ci`;
/// `.ci/run` does it); the test drives Debian's chromium.
const COPILOTKIT: &str = "AGENTD_TEST_COPILOTKIT";

/// A server with the agents the scenarios use: `assistant` (the default:
/// ask_user, human_review) and `careful` (human_review needs approval);
/// with `keys`, only those tenants' keys are let in.
async fn server(keys: Option<&str>) -> SecureServer {
    let keys = keys.map(str::to_owned);
    SecureServer::start(move |dir, settings| {
        let mut assistant = AgentSpec::assistant();
        assistant.tools = vec![ToolEntry::name("ask_user"), ToolEntry::name("human_review")];
        let mut careful = AgentSpec::assistant();
        careful.id = "careful".into();
        careful.default = false;
        careful.tools = vec![
            ToolEntry::name("ask_user"),
            ToolEntry::with_approval("human_review"),
        ];
        settings.agents = vec![assistant, careful];
        if let Some(keys) = keys {
            settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &keys));
        }
    })
    .await
}

async fn post(server: &SecureServer, key: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http()
        .post(format!("http://{}/ag-ui", server.addr))
        .header("accept", "text/event-stream")
        .json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request.send().await.expect("POST /ag-ui")
}

/// The events of an event stream.
async fn events(response: reqwest::Response) -> Vec<Value> {
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.expect("the stream");
    text.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let data = frame.strip_prefix("data: ").expect("a data frame");
            serde_json::from_str(data).expect("an event")
        })
        .collect()
}

/// A refusal's status and its `error` object.
async fn refusal(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.expect("a JSON error");
    (status, body["error"].clone())
}

fn input(thread: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": "r", "messages": [{"id": "m", "role": "user", "content": text}]})
}

#[tokio::test]
async fn refusals_come_before_any_event() {
    let keyed = server(Some(&format!("acme:{ACME_KEY}\n"))).await;
    let (status, error) = refusal(post(&keyed, None, &input("t", "plain hello")).await).await;
    assert_eq!((status, error["code"].as_str()), (401, Some("unauthenticated")));
    let (status, _) = refusal(post(&keyed, Some("not-a-key"), &input("t", "plain")).await).await;
    assert_eq!(status, 401);

    let body =
        json!({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": 3}]});
    let (status, error) = refusal(post(&keyed, Some(ACME_KEY), &body).await).await;
    assert_eq!(status, 400);
    assert_eq!(error["field"], "messages[0].content");
    let (status, error) =
        refusal(post(&keyed, Some(ACME_KEY), &json!({"runId": "r", "messages": []})).await).await;
    assert_eq!((status, error["field"].as_str()), (400, Some("threadId")));

    let unknown = http()
        .get(format!("http://{}/ag-ui/nobody/capabilities", keyed.addr))
        .bearer_auth(ACME_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn a_bad_answer_changes_nothing_and_a_question_answered_elsewhere_is_409() {
    let server = server(None).await;
    let asked = events(post(&server, None, &input("plans", "help me pick a plan")).await).await;
    let finished = asked.last().unwrap();
    assert_eq!(finished["type"], "RUN_FINISHED");
    assert_eq!(finished["outcome"]["type"], "interrupt");
    let interrupt = &finished["outcome"]["interrupts"][0];
    let id = interrupt["id"].as_str().unwrap().to_owned();
    let run_id = finished["runId"].as_str().unwrap().to_owned();
    let resume = |payload: Value| {
        json!({"threadId": "plans", "runId": "r2", "messages": [],
            "resume": [{"interruptId": id, "status": "resolved", "payload": payload}]})
    };

    let (status, error) = refusal(post(&server, None, &resume(json!("Gold"))).await).await;
    assert_eq!(status, 400);
    assert_eq!(error["interruptId"], id.as_str());
    assert_eq!(error["field"], "resume[0].payload");
    let mut client = server.client(None).await;
    let run = client
        .get_run(pb::GetRunRequest {
            run_id: run_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(run.status(), pb::RunStatus::Suspended, "the run is unchanged");

    let answered = client
        .resume(resume_request(
            &run_id,
            &id,
            pb::resume_request::Answer::Text("Pro".into()),
        ))
        .await
        .unwrap();
    collect(answered.into_inner()).await.unwrap();
    let (status, error) = refusal(post(&server, None, &resume(json!("Basic"))).await).await;
    assert_eq!(status, 409);
    assert_eq!(error["interruptId"], id.as_str());
    assert!(
        error["message"].as_str().unwrap().contains("completed"),
        "{error}"
    );
}

/// The tokens of a `RUN_FINISHED`.
fn tokens(finished: &Value) -> u64 {
    finished["usage"][0]["totalTokens"].as_u64().expect("usage")
}

/// A 0.0.x request (no `protocolVersion`): a new message while the run
/// waits is refused with its interrupts; the thread with no new message is
/// replayed; each stream counts its own tokens, which add up to the run's.
#[tokio::test]
async fn a_busy_thread_names_its_interrupts_and_streams_count_their_own_tokens() {
    let server = server(None).await;
    let asked = events(post(&server, None, &input("busy", "help me pick a plan")).await).await;
    let finished = asked.last().unwrap().clone();
    let interrupt = &finished["outcome"]["interrupts"][0];
    let id = interrupt["id"].as_str().unwrap().to_owned();
    let run_id = finished["runId"].as_str().unwrap().to_owned();

    let (status, error) = refusal(post(&server, None, &input("busy", "plain hello")).await).await;
    assert_eq!((status, error["code"].as_str()), (409, Some("thread_busy")));
    assert_eq!(error["runId"], run_id.as_str());
    assert_eq!(error["interrupts"][0], *interrupt, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(!message.contains("Resume"), "{message}");

    let nothing_new = json!({"threadId": "busy", "runId": "r", "messages": []});
    let replayed = events(post(&server, None, &nothing_new).await).await;
    let kinds: Vec<&str> = replayed.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
    assert_eq!(replayed[1]["messages"][0]["content"], "help me pick a plan");
    assert_eq!(replayed[2]["outcome"]["interrupts"][0], *interrupt);
    assert_eq!(tokens(&replayed[2]), 0, "a replay uses no tokens");

    let resume = json!({"threadId": "busy", "runId": "r2", "messages": [],
        "resume": [{"interruptId": id, "status": "resolved", "payload": "Pro"}]});
    let resumed = events(post(&server, None, &resume).await).await;
    let kinds: Vec<&str> = resumed.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds[..4],
        ["RUN_STARTED", "STEP_STARTED", "TOOL_CALL_RESULT", "STEP_FINISHED"]
    );
    let mut client = server.client(None).await;
    let run = client
        .get_run(pb::GetRunRequest { run_id })
        .await
        .unwrap()
        .into_inner();
    let usage = run.usage.expect("the run's usage");
    assert_eq!(
        tokens(&finished) + tokens(resumed.last().unwrap()),
        usage.input_tokens + usage.output_tokens,
        "the streams' usage adds up to the run's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs Node with tests/ag_ui's packages: set AGENTD_TEST_AG_UI; .ci/run runs it"]
async fn the_official_ag_ui_client_drives_agentd() {
    let folder = std::env::var(CLIENT)
        .unwrap_or_else(|_| panic!("{CLIENT} names tests/ag_ui with its packages installed (npm ci)"));
    let open = server(None).await;
    let keyed = server(Some(&format!("acme:{ACME_KEY}\nglobex:{GLOBEX_KEY}\n"))).await;
    let mut child = Command::new("node")
        .arg("run.mjs")
        .current_dir(&folder)
        .env("AGUI_URL", format!("http://{}", open.addr))
        .env("AGUI_KEYED_URL", format!("http://{}", keyed.addr))
        .env("ACME_KEY", ACME_KEY)
        .env("GLOBEX_KEY", GLOBEX_KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start node");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // The client logs each refused request; kept for a failure's report.
    let mut stderr = child.stderr.take().expect("stderr");
    let logged = tokio::spawn(async move {
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut text)
            .await
            .ok();
        text
    });
    let mut output = String::new();
    let mut answered = false;
    while let Some(line) = lines.next_line().await.expect("read the client") {
        output.push_str(&line);
        output.push('\n');
        if let Some(run_id) = line.strip_prefix("waiting run: ") {
            // The client waits to resume; the question is answered here.
            let mut client = open.client(None).await;
            let stream = client
                .resume(resume_request(
                    run_id,
                    "",
                    pb::resume_request::Answer::Text("Enterprise".into()),
                ))
                .await
                .expect("answered through gRPC");
            collect(stream.into_inner()).await.expect("the continuation");
            stdin.write_all(b"answered\n").await.expect("tell the client");
            answered = true;
        }
    }
    let status = child.wait().await.expect("node ran");
    let logged = logged.await.unwrap_or_default();
    println!("{output}");
    assert!(
        status.success(),
        "the AG-UI client's scenarios failed:\n{output}\n--- its log:\n{logged}"
    );
    assert!(answered, "the client waited on a question answered through gRPC");
    assert!(output.contains("all scenarios passed"), "{output}");
}

/// Stock CopilotKit in Chromium (`tests/copilotkit/run.mjs`: react-core
/// 1.74's CopilotChat and useInterrupt, runtime 1.75's CopilotRuntime with
/// @ag-ui/client 0.0.59's HttpAgent pointing at /ag-ui): a frontend tool, a
/// cancelled question, two questions answered together, and a reloaded
/// page that comes back to its open questions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Node with tests/copilotkit's packages and chromium: set AGENTD_TEST_COPILOTKIT; .ci/run runs it"]
async fn stock_copilotkit_in_chromium_drives_agentd() {
    let folder = std::env::var(COPILOTKIT).unwrap_or_else(|_| {
        panic!("{COPILOTKIT} names tests/copilotkit with its packages installed (npm ci)")
    });
    let server = server(None).await;
    let output = Command::new("node")
        .arg("run.mjs")
        .current_dir(&folder)
        .env("AGUI_URL", format!("http://{}", server.addr))
        .kill_on_drop(true)
        .output()
        .await
        .expect("start node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success() && stdout.contains("all steps passed"),
        "stock CopilotKit's steps failed:\n{stdout}\n--- its log:\n{stderr}"
    );
    // The question the page cancelled cancelled its run in agentd, and
    // nothing waits any more.
    let mut client = server.client(None).await;
    let runs = |status: pb::RunStatus| pb::ListRunsRequest {
        status: status.into(),
        ..Default::default()
    };
    let cancelled = client
        .list_runs(runs(pb::RunStatus::Cancelled))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cancelled.runs.len(), 1, "{:?}", cancelled.runs);
    let waiting = client
        .list_runs(runs(pb::RunStatus::Suspended))
        .await
        .unwrap()
        .into_inner();
    assert!(waiting.runs.is_empty(), "{:?}", waiting.runs);
}

#[tokio::test]
async fn a_question_asked_over_grpc_is_answered_over_ag_ui() {
    let server = server(None).await;
    let mut client = server.client(None).await;
    let stream = client
        .stream_agent(pb::StreamAgentRequest {
            prompt: "help me pick a plan".into(),
            thread_id: "from-grpc".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let chunks = collect(stream.into_inner()).await.unwrap();
    let run_id = chunks[0].run_id.clone();
    let call = chunks
        .iter()
        .find_map(|chunk| match &chunk.chunk {
            Some(pb::agent_chunk::Chunk::ToolCallSuspended(suspended)) => {
                Some(suspended.tool_call_id.clone())
            }
            _ => None,
        })
        .expect("a question");
    let body = json!({"threadId": "from-grpc", "runId": "r", "messages": [],
        "resume": [{"interruptId": call, "status": "resolved", "payload": "Basic"}]});
    let events = events(post(&server, None, &body).await).await;
    assert_eq!(events[0]["type"], "RUN_STARTED");
    assert_eq!(events[0]["runId"], run_id.as_str(), "the gRPC run goes on");
    let finished = events.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "success");
    assert_eq!(finished["result"], "Thanks! You answered: Basic.");
    let run = client
        .get_run(pb::GetRunRequest { run_id })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(run.decisions.len(), 1, "{:?}", run.decisions);
    assert_eq!(run.decisions[0].source(), pb::DecisionSource::AgUi);
    assert_eq!(run.decisions[0].tool_call_id, call);
}

/// An MCP server's request for input is an interrupt of reason
/// `elicitation` whose `responseSchema` is `{action, content}`, content
/// the server's form; the resume's payload goes back to the server as
/// given, and content that breaks the form is refused before any event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with the MCP SDK: set AGENTD_TEST_MCP_PYTHON; .ci/run runs it"]
async fn an_mcp_servers_request_for_input_is_an_elicitation_interrupt() {
    let server = crate::web::browser::elicitation_server().await;
    let asked = events(
        post(
            &server,
            None,
            &input("trip", r#"call book {"destination": "Lisbon"}"#),
        )
        .await,
    )
    .await;
    let finished = asked.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "interrupt", "{finished}");
    let interrupt = &finished["outcome"]["interrupts"][0];
    assert_eq!(interrupt["reason"], "elicitation");
    assert_eq!(interrupt["message"], "Book a stay in Lisbon?");
    let form = &interrupt["responseSchema"]["properties"]["content"];
    assert_eq!(form["properties"]["nights"]["type"], "integer", "{interrupt}");
    assert_eq!(interrupt["metadata"]["elicitation"]["server"], "travel");
    let id = interrupt["id"].as_str().unwrap().to_owned();
    let resume = |payload: Value| {
        json!({"threadId": "trip", "runId": "r2", "messages": [],
            "resume": [{"interruptId": id, "status": "resolved", "payload": payload}]})
    };

    let accept = |content: Value| json!({"action": "accept", "content": content});
    let bad = accept(json!({"email": "ana@example.com", "nights": 0}));
    let (status, error) = refusal(post(&server, None, &resume(bad)).await).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["interruptId"], id.as_str());
    assert!(error["message"].as_str().unwrap().contains("nights"), "{error}");

    let given = accept(json!({"email": "ana@example.com", "nights": 3}));
    let continued = events(post(&server, None, &resume(given)).await).await;
    let result = continued
        .iter()
        .find(|event| event["type"] == "TOOL_CALL_RESULT")
        .expect("the tool's result");
    let content = result["content"].as_str().unwrap();
    assert!(content.starts_with("booked Lisbon: "), "{content}");
    assert!(content.contains("\"nights\": 3"), "{content}");
    assert_eq!(continued.last().unwrap()["outcome"]["type"], "success");
}
