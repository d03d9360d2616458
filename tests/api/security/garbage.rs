//! Hostile input over real connections: a few thousand random and
//! malformed requests to every RPC (garbage strings, huge fields, bytes
//! that are not protobuf, invalid UTF-8 inside string fields and JSON
//! arguments, JSON nested deeper than anything sane, answers of every
//! shape to real suspended runs). Every request must get a status, from
//! the set a careful server gives for bad input, within a bounded time;
//! afterwards the server must still serve. The seed is fixed (override it
//! with AGENTD_GARBAGE_SEED) so a failure can be replayed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentd::agent::AgentSpec;
use agentd::limits::Limits;
use agentd::pb;
use prost::Message as _;
use prost_types::value::Kind;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tonic::Code;

use super::raw;
use super::server::SecureServer;
use crate::helpers::{collect, finish_reason, run_id};

const REQUESTS: usize = 3000;
const CONCURRENCY: usize = 24;
const DEFAULT_SEED: u64 = 0x5EC0_2026;
const MAX_REQUEST_BYTES: usize = 64 * 1024;
/// A string the encoder leaves intact, replaced by invalid UTF-8 after.
const MARKER: &str = "\u{1}MARKER\u{1}MARK";
/// Byte strings as long as [`MARKER`] that are not UTF-8: stray bytes,
/// surrogates, overlong encodings, a five-byte sequence.
const INVALID_UTF8: [[u8; 12]; 4] = [
    [0xFF; 12],
    *b"\xED\xA0\x80\xED\xA0\x80\xED\xA0\x80\xED\xA0\x80",
    *b"\xC0\x80\xC0\x80\xC0\x80\xC0\x80\xC0\x80\xC0\x80",
    *b"ab\xF8\x88\x80\x80\x80cdefg",
];

/// Statuses a server may answer hostile input with.
const ALLOWED: [Code; 7] = [
    Code::Ok,
    Code::InvalidArgument,
    Code::NotFound,
    Code::FailedPrecondition,
    Code::ResourceExhausted,
    Code::AlreadyExists,
    Code::DeadlineExceeded,
];

const METHODS: [(&str, bool); 11] = [
    ("StreamAgent", true),
    ("Resume", true),
    ("SubscribeRun", true),
    ("GetRun", false),
    ("ListRuns", false),
    ("CancelRun", false),
    ("ListAgents", false),
    ("ExecuteTool", false),
    ("GetThread", false),
    ("ListThreads", false),
    ("DeleteThread", false),
];

struct Gen {
    rng: fastrand::Rng,
    run_ids: Vec<String>,
}

impl Gen {
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.usize(..items.len())]
    }

    fn any_char(&mut self) -> char {
        loop {
            if let Some(c) = char::from_u32(self.rng.u32(..0x11_0000)) {
                return c;
            }
        }
    }

    fn string(&mut self) -> String {
        let len = self.rng.usize(..40);
        match self.rng.u8(..12) {
            0 => String::new(),
            1 => (0..len).map(|_| self.rng.alphanumeric()).collect(),
            2 => (0..len).map(|_| self.any_char()).collect(),
            3 => (0..len).map(|_| char::from(self.rng.u8(..32))).collect(),
            4 => "x".repeat(self.rng.usize(1000..MAX_REQUEST_BYTES + 2000)),
            5 if !self.run_ids.is_empty() => self.pick(&self.run_ids.clone()).clone(),
            5 => uuid_like(&mut self.rng),
            6 => self.pick(&KEYWORDS).to_string(),
            7 => format!("call {} {}", self.pick(&TOOLS), self.json_text()),
            8 => self.pick(&ODD_TEXT).repeat(self.rng.usize(1..50)),
            9 => self.pick(&NUMBERS).to_string(),
            10 => MARKER.to_owned(),
            _ => format!("{} {}", self.pick(&KEYWORDS), self.json_text()),
        }
    }

    /// Text that looks like JSON, often is not.
    fn json_text(&mut self) -> String {
        match self.rng.u8(..8) {
            0 => agentd::grpc::convert::struct_to_json(&self.fields(4)).to_string(),
            1 => {
                let depth = self.rng.usize(1..5000);
                format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
            }
            2 => {
                let depth = self.rng.usize(1..5000);
                format!("{}{}", r#"{"question":"#.repeat(depth), "\"q\"") + &"}".repeat(depth)
            }
            3 => r#"{"question": "\uD800", "options": [{"label": "\u0000"}]}"#.to_owned(),
            4 => r#"{"question": "Q?", "options": [{"label": "a"}, {"label": "a"}], "selectionMode": "multi_select"}"#.to_owned(),
            5 => format!(r#"{{"question": {}}}"#, self.pick(&NUMBERS)),
            6 => {
                let text = serde_json::json!({"question": self.string(), "options": [{"label": self.string(), "description": self.string()}]});
                let text = text.to_string();
                let mut cut = self.rng.usize(..=text.len());
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text[..cut].to_owned()
            }
            _ => "{".to_owned() + &self.string(),
        }
    }

    fn value(&mut self, depth: usize) -> prost_types::Value {
        let kind = match self.rng.u8(..if depth == 0 { 4 } else { 6 }) {
            0 => Kind::NullValue(self.rng.i32(..)),
            1 => Kind::NumberValue(*self.pick(&[
                0.0,
                -1.5,
                1e300,
                f64::NAN,
                f64::INFINITY,
                9.007_199_254_740_993e15,
            ])),
            2 => Kind::StringValue(self.string()),
            3 => Kind::BoolValue(self.rng.bool()),
            4 => Kind::ListValue(prost_types::ListValue {
                values: (0..self.rng.usize(..4)).map(|_| self.value(depth - 1)).collect(),
            }),
            _ => Kind::StructValue(self.fields(depth - 1)),
        };
        prost_types::Value { kind: Some(kind) }
    }

    fn fields(&mut self, depth: usize) -> prost_types::Struct {
        let mut fields = BTreeMap::new();
        for _ in 0..self.rng.usize(..4) {
            let key = if self.rng.bool() {
                self.pick(&[
                    "question",
                    "options",
                    "selectionMode",
                    "label",
                    "description",
                    "draft",
                    "decision",
                ])
                .to_string()
            } else {
                self.string()
            };
            fields.insert(key, self.value(depth));
        }
        prost_types::Struct { fields }
    }

    /// A Value nested `depth` lists deep.
    fn deep(&mut self, depth: usize) -> prost_types::Value {
        let mut value = prost_types::Value {
            kind: Some(Kind::StringValue("bottom".into())),
        };
        for _ in 0..depth {
            value = if self.rng.bool() {
                prost_types::Value {
                    kind: Some(Kind::ListValue(prost_types::ListValue { values: vec![value] })),
                }
            } else {
                prost_types::Value {
                    kind: Some(Kind::StructValue(prost_types::Struct {
                        fields: [("question".to_owned(), value)].into_iter().collect(),
                    })),
                }
            };
        }
        value
    }

    fn answer(&mut self) -> Option<pb::resume_request::Answer> {
        use pb::resume_request::Answer;
        Some(match self.rng.u8(..6) {
            0 => return None,
            1 => Answer::Text(self.string()),
            2 => Answer::Text(self.pick(&["Pro", "Basic", "Ada", "Mushrooms"]).to_string()),
            3 => Answer::Selections(pb::Selections {
                labels: (0..self.rng.usize(..5)).map(|_| self.string()).collect(),
            }),
            4 => Answer::Data(self.value(5)),
            _ => Answer::Approval(pb::Approval {
                approved: self.rng.bool(),
                reason: self.string(),
                edited_args: self.rng.bool().then(|| self.fields(3)),
                ..Default::default()
            }),
        })
    }

    fn structured(&mut self, method: &str) -> Vec<u8> {
        match method {
            "StreamAgent" => pb::StreamAgentRequest {
                agent_id: if self.rng.bool() {
                    String::new()
                } else {
                    self.string()
                },
                prompt: if self.rng.u8(..4) == 0 {
                    String::new()
                } else {
                    self.string()
                },
                messages: (0..self.rng.usize(..3))
                    .map(|_| pb::Message {
                        role: self.rng.i32(-1..5),
                        content: self.string(),
                    })
                    .collect(),
                options: self.rng.bool().then(|| pb::RunOptions {
                    max_steps: self.rng.u32(..),
                    require_tool_approval: self.rng.bool(),
                    on_disconnect: self.rng.i32(-1..4),
                    suspend_ttl_seconds: self.rng.u64(..),
                }),
                metadata: (0..self.rng.usize(..3))
                    .map(|_| (self.string(), self.string()))
                    .collect(),
                request_id: if self.rng.bool() {
                    String::new()
                } else {
                    self.string()
                },
                tools: Vec::new(),
                thread_id: if self.rng.bool() {
                    String::new()
                } else {
                    self.string()
                },
                auto_resume: self.rng.bool(),
            }
            .encode_to_vec(),
            "Resume" => pb::ResumeRequest {
                run_id: self.string(),
                tool_call_id: if self.rng.bool() {
                    String::new()
                } else {
                    self.string()
                },
                answer: self.answer(),
                request_id: if self.rng.bool() {
                    String::new()
                } else {
                    self.string()
                },
                answers: if self.rng.bool() {
                    Vec::new()
                } else {
                    vec![pb::ToolAnswer {
                        tool_call_id: self.string(),
                        answer: Some(pb::tool_answer::Answer::Text(self.string())),
                    }]
                },
            }
            .encode_to_vec(),
            "SubscribeRun" => pb::SubscribeRunRequest {
                run_id: self.string(),
                after_seq: *self.pick(&[0, 1, 3, 1000, u64::MAX]),
            }
            .encode_to_vec(),
            "GetRun" => pb::GetRunRequest {
                run_id: self.string(),
            }
            .encode_to_vec(),
            "ListRuns" => pb::ListRunsRequest {
                status: self.rng.i32(-1..9),
                agent_id: self.string(),
                page_size: self.rng.u32(..),
                page_token: self.string(),
            }
            .encode_to_vec(),
            "CancelRun" => pb::CancelRunRequest {
                run_id: self.string(),
                reason: self.string(),
            }
            .encode_to_vec(),
            "ListAgents" => pb::ListAgentsRequest {}.encode_to_vec(),
            "GetThread" => pb::GetThreadRequest {
                thread_id: self.string(),
            }
            .encode_to_vec(),
            "ListThreads" => pb::ListThreadsRequest {
                page_size: self.rng.u32(..),
                page_token: self.string(),
            }
            .encode_to_vec(),
            "DeleteThread" => pb::DeleteThreadRequest {
                thread_id: self.string(),
            }
            .encode_to_vec(),
            _ => pb::ExecuteToolRequest {
                tool_name: self.pick(&TOOLS).to_string(),
                args: self.rng.bool().then(|| self.fields(4)),
                agent_id: if self.rng.bool() {
                    String::new()
                } else {
                    self.string()
                },
            }
            .encode_to_vec(),
        }
    }

    /// A request body for `method`, well formed or not.
    fn body(&mut self, method: &str) -> Vec<u8> {
        match self.rng.u8(..10) {
            0 => (0..self.rng.usize(..300)).map(|_| self.rng.u8(..)).collect(),
            1 => {
                let mut bytes = self.structured(method);
                for _ in 0..self.rng.usize(1..6) {
                    if bytes.is_empty() {
                        break;
                    }
                    let at = self.rng.usize(..bytes.len());
                    match self.rng.u8(..3) {
                        0 => bytes[at] = self.rng.u8(..),
                        1 => bytes.truncate(at),
                        _ => bytes.insert(at, self.rng.u8(..)),
                    }
                }
                bytes
            }
            2 => {
                // Invalid UTF-8 where a string must be.
                let mut bytes = match method {
                    "ExecuteTool" => pb::ExecuteToolRequest {
                        tool_name: "ask_user".into(),
                        args: Some(agentd::grpc::convert::json_to_struct(
                            &serde_json::json!({"question": MARKER}),
                        )),
                        agent_id: String::new(),
                    }
                    .encode_to_vec(),
                    "Resume" => pb::ResumeRequest {
                        run_id: self.run_ids.first().cloned().unwrap_or_default(),
                        answer: Some(pb::resume_request::Answer::Data(prost_types::Value {
                            kind: Some(Kind::StringValue(MARKER.into())),
                        })),
                        ..Default::default()
                    }
                    .encode_to_vec(),
                    _ => pb::StreamAgentRequest {
                        prompt: MARKER.into(),
                        ..Default::default()
                    }
                    .encode_to_vec(),
                };
                let invalid = *self.pick(&INVALID_UTF8);
                splice(&mut bytes, MARKER.as_bytes(), &invalid);
                bytes
            }
            3 => {
                // Nesting, often deeper than protobuf decodes.
                let depth = self.rng.usize(1..300);
                let deep = self.deep(depth);
                match method {
                    "Resume" => pb::ResumeRequest {
                        run_id: self.string(),
                        answer: Some(pb::resume_request::Answer::Data(deep)),
                        ..Default::default()
                    }
                    .encode_to_vec(),
                    _ => pb::ExecuteToolRequest {
                        tool_name: "ask_user".into(),
                        args: Some(prost_types::Struct {
                            fields: [("question".to_owned(), deep)].into_iter().collect(),
                        }),
                        agent_id: String::new(),
                    }
                    .encode_to_vec(),
                }
            }
            _ => self.structured(method),
        }
    }
}

fn uuid_like(rng: &mut fastrand::Rng) -> String {
    let hex: String = (0..32)
        .map(|_| char::from_digit(rng.u32(..16), 16).unwrap_or('0'))
        .collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Replaces the first `marker` in `bytes` with `with` (same length).
fn splice(bytes: &mut [u8], marker: &[u8], with: &[u8]) {
    assert_eq!(marker.len(), with.len());
    if let Some(at) = bytes.windows(marker.len()).position(|w| w == marker) {
        bytes[at..at + marker.len()].copy_from_slice(with);
    }
}

const KEYWORDS: [&str; 10] = [
    "plain",
    "Help me pick a plan",
    "multi",
    "free",
    "two questions",
    "invalid",
    "stream 5",
    "stream 0",
    "call",
    "then call",
];
const TOOLS: [&str; 5] = ["ask_user", "human_review", "launch_rockets", "", "ask_user "];
const ODD_TEXT: [&str; 8] = [
    "\u{FEFF}",
    "\u{202E}",
    "👩‍👩‍👧‍👦",
    "e\u{301}",
    "\0",
    "\r\n",
    "\\u0000",
    "%s%n",
];
const NUMBERS: [&str; 7] = [
    "-1",
    "18446744073709551616",
    "1e999",
    "NaN",
    "0x10",
    "-0",
    "1.7976931348623157e309",
];

async fn suspended_runs(server: &SecureServer) -> Vec<String> {
    let mut client = server.client(None).await;
    let mut ids = Vec::new();
    let prompts = [
        ("", "Help me pick a plan"),
        ("", "multi toppings"),
        ("", "free text"),
        ("", "two questions"),
        ("writer", r#"call human_review {"draft": "Dear customer"}"#),
        (
            "writer",
            r#"call ask_user {"question": "Who?"} then call human_review {"draft": "Hi"}"#,
        ),
    ];
    for (agent_id, prompt) in prompts {
        let chunks = collect(
            client
                .stream_agent(pb::StreamAgentRequest {
                    agent_id: agent_id.into(),
                    prompt: prompt.into(),
                    ..Default::default()
                })
                .await
                .expect("StreamAgent")
                .into_inner(),
        )
        .await
        .expect("stream");
        assert_eq!(finish_reason(&chunks), pb::FinishReason::Suspended, "{prompt}");
        ids.push(run_id(&chunks));
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_hostile_requests_each_get_a_status_and_the_server_keeps_serving() {
    let seed = std::env::var("AGENTD_GARBAGE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let server = SecureServer::start(|_, settings| {
        settings.limits = Limits {
            max_request_bytes: MAX_REQUEST_BYTES,
            ..Limits::default()
        };
        settings.agents = vec![
            AgentSpec::assistant(),
            AgentSpec {
                id: "writer".into(),
                default: false,
                tools: vec!["ask_user".into(), "human_review".into()],
                ..AgentSpec::assistant()
            },
        ];
    })
    .await;
    let run_ids = suspended_runs(&server).await;
    let mut gen = Gen {
        rng: fastrand::Rng::with_seed(seed),
        run_ids,
    };
    let channels = [
        server.channel().await,
        server.channel().await,
        server.channel().await,
        server.channel().await,
    ];
    let permits = Arc::new(Semaphore::new(CONCURRENCY));
    let mut calls = JoinSet::new();
    for index in 0..REQUESTS {
        let &(method, streaming) = gen.pick(&METHODS);
        let body = gen.body(method);
        let channel = channels[index % channels.len()].clone();
        let permit = Arc::clone(&permits).acquire_owned().await.expect("semaphore");
        calls.spawn(async move {
            let size = body.len();
            let head: Vec<u8> = body.iter().take(64).copied().collect();
            let status = tokio::time::timeout(
                Duration::from_secs(30),
                raw::call(channel, method, streaming, body),
            )
            .await;
            drop(permit);
            (index, method, size, head, status)
        });
    }
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(joined) = calls.join_next().await {
        let (index, method, size, head, status) = joined.expect("a call task");
        let status = status.unwrap_or_else(|_| {
            panic!("request {index} ({method}, {size} bytes) got no answer in 30 s (seed {seed})")
        });
        assert!(
            ALLOWED.contains(&status.code()),
            "request {index} ({method}, {size} bytes, starting {head:?}) got {status:?} (seed {seed})"
        );
        *codes.entry(format!("{method} {:?}", status.code())).or_insert(0) += 1;
    }
    eprintln!("hostile requests by answer (seed {seed}): {codes:#?}");

    // Still serving, on old and new connections.
    let mut client = server.client(None).await;
    client
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("ListAgents after the storm");
    let chunks = collect(
        client
            .stream_agent(pb::StreamAgentRequest {
                prompt: "plain after the storm".into(),
                ..Default::default()
            })
            .await
            .expect("StreamAgent after the storm")
            .into_inner(),
    )
    .await
    .expect("a whole stream");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
    let status = raw::call(channels[0].clone(), "ListAgents", false, Vec::new()).await;
    assert_eq!(
        status.code(),
        Code::Ok,
        "an old connection still works: {status:?}"
    );
}

/// A gRPC frame: the compression flag, the length, the message.
fn frame(length: u32, message: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0];
    bytes.extend_from_slice(&length.to_be_bytes());
    bytes.extend_from_slice(message);
    bytes
}

#[tokio::test]
async fn a_truncated_frame_or_a_missing_message_is_invalid_argument() {
    let server = SecureServer::start(|_, _| {}).await;
    let channel = server.channel().await;
    let request = pb::StreamAgentRequest {
        prompt: "plain".into(),
        ..Default::default()
    }
    .encode_to_vec();
    let promised = u32::try_from(request.len()).unwrap() + 10;
    for (method, body, message) in [
        (
            "StreamAgent",
            frame(promised, &request),
            "the request ends inside a message: its gRPC frame is shorter than its length prefix says",
        ),
        // A frame's header alone is, to tonic, no message.
        (
            "ListAgents",
            frame(5, &[]),
            "the request has no message, or only the header of one: a call sends exactly one",
        ),
        // Half a frame header.
        (
            "GetRun",
            vec![0, 0, 0],
            "the request ends inside a message: its gRPC frame is shorter than its length prefix says",
        ),
        (
            "ListAgents",
            Vec::new(),
            "the request has no message, or only the header of one: a call sends exactly one",
        ),
    ] {
        let status = raw::call_with_body(channel.clone(), method, body).await;
        assert_eq!(status.code(), Code::InvalidArgument, "{method}: {status:?}");
        assert_eq!(status.message(), message, "{method}");
        let info = tonic_types::StatusExt::get_details_error_info(&status).expect("ErrorInfo");
        assert_eq!(info.reason, "MALFORMED_REQUEST");
    }
    // The same bytes, whole, are served.
    let status = raw::call_with_body(channel, "ListAgents", frame(0, &[])).await;
    assert_eq!(status.code(), Code::Ok, "{status:?}");
}
