//! A real `agentd` process for the replica tests: started on an ephemeral
//! port with a given store and short leases (so that a takeover after a
//! crash happens within about a second), its log kept and printed if the
//! test fails. Killed (SIGKILL) when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use agentd::pb::agent_chunk::Chunk;
use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::pb::{self, AgentChunk};
use tonic::transport::Channel;

use crate::helpers::collect;
use crate::pg::TestSchema;

const LISTENING: &str = "agentd listening on ";
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Lease settings of every replica in these tests, in milliseconds.
pub const LEASE_TTL_MS: u64 = 1000;
const LEASE_RENEW_MS: u64 = 200;
const RECOVERY_INTERVAL_MS: u64 = 200;

pub struct Replica {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Replica {
    /// Starts `agentd` on `store` (a URL), with its data dir in `data_dir`,
    /// and waits until it listens.
    pub fn start(store: &str, data_dir: &Path, name: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(["--listen", "127.0.0.1:0", "--store", store, "--replica-id", name])
            .arg("--data-dir")
            .arg(data_dir)
            .env("AGENTD_LEASE_TTL_MS", LEASE_TTL_MS.to_string())
            .env("AGENTD_LEASE_RENEW_MS", LEASE_RENEW_MS.to_string())
            .env("AGENTD_RECOVERY_INTERVAL_MS", RECOVERY_INTERVAL_MS.to_string())
            .env_remove("AGENTD_CONFIG")
            .env_remove("AGENTD_LISTEN")
            .env_remove("AGENTD_DATA_DIR")
            .env_remove("AGENTD_STORE")
            .env_remove("AGENTD_SUSPEND_TTL_SECS")
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the agentd binary");
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (found, address) = mpsc::channel();
        let reader = {
            let log = Arc::clone(&log);
            let name = name.to_owned();
            std::thread::spawn(move || {
                let mut found = Some(found);
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let line = strip_escapes(&line);
                    if let Some(addr) = listen_address(&line) {
                        if let Some(found) = found.take() {
                            let _ = found.send(addr);
                        }
                    }
                    log.lock().unwrap().push(format!("[{name}] {line}"));
                }
            })
        };
        let mut replica = Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
            reader: Some(reader),
        };
        match address.recv_timeout(STARTUP_TIMEOUT) {
            Ok(addr) => replica.addr = addr,
            Err(_) => panic!(
                "agentd did not start within {STARTUP_TIMEOUT:?}\n{}",
                replica.log_text()
            ),
        }
        replica
    }

    pub async fn client(&self) -> AgentServiceClient<Channel> {
        AgentServiceClient::connect(format!("http://{}", self.addr))
            .await
            .expect("connect to agentd")
            .max_decoding_message_size(64 * 1024 * 1024)
    }

    /// SIGKILL: no shutdown code runs, as in a crash.
    pub fn kill_hard(&mut self) {
        self.child.kill().expect("kill agentd");
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().map(|lines| lines.join("\n")).unwrap_or_default()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("--- agentd log ---\n{}", self.log_text());
        }
    }
}

fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

fn listen_address(line: &str) -> Option<SocketAddr> {
    let (_, rest) = line.split_once(LISTENING)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// Two replicas on one fresh PostgreSQL schema; `None` when PostgreSQL
/// tests are skipped. The schema outlives the replicas (dropped last).
pub struct Pair {
    pub a: Replica,
    pub b: Replica,
    _dirs: tempfile::TempDir,
    _schema: TestSchema,
}

impl Pair {
    pub async fn start() -> Option<Self> {
        let schema = TestSchema::create().await?;
        let dirs = tempfile::tempdir().expect("temp dir");
        let url = schema.url();
        let a = Replica::start(&url, &dirs.path().join("a"), "replica-a");
        let b = Replica::start(&url, &dirs.path().join("b"), "replica-b");
        Some(Self {
            a,
            b,
            _dirs: dirs,
            _schema: schema,
        })
    }
}

pub async fn start_run(
    client: &mut AgentServiceClient<Channel>,
    prompt: &str,
) -> tonic::Streaming<AgentChunk> {
    let request = pb::StreamAgentRequest {
        prompt: prompt.into(),
        ..Default::default()
    };
    client
        .stream_agent(request)
        .await
        .expect("StreamAgent")
        .into_inner()
}

pub async fn stream_prompt(client: &mut AgentServiceClient<Channel>, prompt: &str) -> Vec<AgentChunk> {
    collect(start_run(client, prompt).await)
        .await
        .expect("StreamAgent stream")
}

pub async fn subscribe(
    client: &mut AgentServiceClient<Channel>,
    run_id: &str,
    after_seq: u64,
) -> tonic::Streaming<AgentChunk> {
    let request = pb::SubscribeRunRequest {
        run_id: run_id.into(),
        after_seq,
    };
    client
        .subscribe_run(request)
        .await
        .expect("SubscribeRun")
        .into_inner()
}

pub async fn get_run(client: &mut AgentServiceClient<Channel>, run_id: &str) -> pb::Run {
    let request = pb::GetRunRequest {
        run_id: run_id.into(),
    };
    client.get_run(request).await.expect("GetRun").into_inner()
}

pub fn seqs(chunks: &[AgentChunk]) -> Vec<u64> {
    chunks.iter().map(|c| c.seq).collect()
}

/// Asserts that `chunks` are seqs `first..` without gap or repeat.
pub fn assert_contiguous(chunks: &[AgentChunk], first: u64) {
    let expected: Vec<u64> = (first..first + chunks.len() as u64).collect();
    assert_eq!(seqs(chunks), expected, "seqs must rise by exactly one");
}

/// Whether the chunk is a `start` of a resumption.
pub fn is_resumed_start(chunk: &AgentChunk) -> bool {
    matches!(&chunk.chunk, Some(Chunk::Start(start)) if start.resumed)
}
