//! Restarts with real processes: the `agentd` binary serves a suspended run,
//! is killed, and a new process on the same data dir resumes it. Also checks
//! that SIGTERM shuts the server down cleanly.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use agentd::pb::agent_chunk::Chunk;
use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::pb::{self, AgentChunk};
use tonic::transport::Channel;

use crate::helpers::{
    ask_user_payload, collect, finish, finish_reason, resume_request, run_id, status_of, suspensions, text,
    tool_results,
};

const LISTENING: &str = "agentd listening on ";
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `agentd` process. Killed (SIGKILL) when dropped, so a failing
/// test never leaves a server behind; its log is printed if the test panics.
pub(crate) struct ServerProcess {
    child: Child,
    pub(crate) addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts the binary on an ephemeral port with its store in `data_dir`
    /// and waits until it logs the address it listens on.
    fn start(data_dir: &Path) -> Self {
        Self::start_with(data_dir, &[], &[])
    }

    /// [`ServerProcess::start`] with more arguments and environment
    /// variables.
    pub(crate) fn start_with(data_dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(args)
            .envs(envs.iter().copied())
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data-dir")
            .arg(data_dir)
            // Settings from the environment must not leak into the test.
            .env_remove("AGENTD_CONFIG")
            .env_remove("AGENTD_LISTEN")
            .env_remove("AGENTD_DATA_DIR")
            .env_remove("AGENTD_STORE")
            .env_remove("AGENTD_SUSPEND_TTL_SECS")
            .env("RUST_LOG", "info")
            // tracing-subscriber honours NO_COLOR; escapes are stripped anyway.
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the agentd binary");

        // Read stderr on a thread for the whole life of the process: an
        // unread pipe would fill up and block the server's logging.
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (found, address) = mpsc::channel();
        let reader = {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut found = Some(found);
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let line = strip_ansi(&line);
                    if let Some(addr) = listen_address(&line) {
                        if let Some(found) = found.take() {
                            let _ = found.send(addr);
                        }
                    }
                    log.lock().unwrap().push(line);
                }
            })
        };

        let mut server = Self {
            child,
            // Replaced below; the guard exists before we can fail.
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
            reader: Some(reader),
        };
        match address.recv_timeout(STARTUP_TIMEOUT) {
            Ok(addr) => server.addr = addr,
            Err(_) => {
                let status = server.child.try_wait().ok().flatten();
                panic!(
                    "agentd did not log {LISTENING:?} within {STARTUP_TIMEOUT:?} (exit status: {status:?})\n{}",
                    server.log_text()
                );
            }
        }
        server
    }

    pub(crate) async fn client(&self) -> AgentServiceClient<Channel> {
        AgentServiceClient::connect(format!("http://{}", self.addr))
            .await
            .expect("connect to agentd")
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown code runs, as in a crash or an OOM kill.
    fn kill_hard(&mut self) {
        self.child.kill().expect("kill agentd");
        let status = self.child.wait().expect("wait for agentd");
        self.finish_log();
        assert!(
            !status.success(),
            "a killed process cannot exit successfully: {status}"
        );
    }

    /// Sends SIGTERM and waits up to `limit` for the process to exit. Async,
    /// so that connected clients keep running (a graceful HTTP/2 shutdown
    /// needs the client to answer the server's GOAWAY and PING).
    pub(crate) async fn terminate(&mut self, limit: Duration) -> ExitStatus {
        self.send_sigterm();
        self.wait_for_exit(limit).await
    }

    /// Sends SIGTERM and returns at once.
    pub(crate) fn send_sigterm(&self) {
        let sent = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed: {sent}");
    }

    /// Waits up to `limit` for the process to exit.
    pub(crate) async fn wait_for_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                self.finish_log();
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "agentd did not exit within {limit:?} of SIGTERM\n{}",
                self.log_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// After the process exited: waits until its last log lines are read.
    fn finish_log(&mut self) {
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }

    pub(crate) fn log_text(&self) -> String {
        self.log.lock().map(|lines| lines.join("\n")).unwrap_or_default()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Already exited (killed or terminated by the test): nothing to do.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- agentd (pid {}) log ---\n{}",
                self.child.id(),
                self.log_text()
            );
        }
    }
}

/// Removes ANSI escape sequences (CSI `ESC [ ... final` and two-byte `ESC x`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // `ESC [ params final`: skip through the final byte; any other
        // escape is two characters long.
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

/// The address in a `... agentd listening on 127.0.0.1:PORT ...` line.
fn listen_address(line: &str) -> Option<SocketAddr> {
    let (_, rest) = line.split_once(LISTENING)?;
    // A text line, or the message of a JSON line (`--log-format json`).
    let token = rest
        .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
        .next()?;
    token.parse().ok()
}

async fn stream_prompt(client: &mut AgentServiceClient<Channel>, prompt: &str) -> Vec<AgentChunk> {
    let request = pb::StreamAgentRequest {
        prompt: prompt.into(),
        ..Default::default()
    };
    let stream = client
        .stream_agent(request)
        .await
        .expect("StreamAgent")
        .into_inner();
    collect(stream).await.expect("StreamAgent stream")
}

async fn get_run(client: &mut AgentServiceClient<Channel>, run_id: &str) -> pb::Run {
    client
        .get_run(pb::GetRunRequest {
            run_id: run_id.into(),
        })
        .await
        .expect("GetRun")
        .into_inner()
}

fn seqs(chunks: &[AgentChunk]) -> Vec<u64> {
    chunks.iter().map(|c| c.seq).collect()
}

#[test]
fn strip_ansi_and_parse_listen_line() {
    let coloured = "\u{1b}[2m2025-01-01T00:00:00Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2magentd\u{1b}[0m\u{1b}[2m:\u{1b}[0m agentd listening on 127.0.0.1:43210 \u{1b}[3mstore\u{1b}[0m\u{1b}[2m=\u{1b}[0msqlite://x";
    let plain = strip_ansi(coloured);
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    assert_eq!(listen_address(&plain), Some("127.0.0.1:43210".parse().unwrap()));
    assert_eq!(listen_address("INFO agentd: shutting down"), None);
}

/// A run suspended in one process is resumed by another after a SIGKILL.
#[tokio::test]
async fn suspended_run_survives_a_hard_kill() {
    let data = tempfile::tempdir().expect("temp dir");

    // First process: the run suspends on ask_user.
    let mut first = ServerProcess::start(data.path());
    let mut client = first.client().await;
    let opening = stream_prompt(&mut client, "Help me pick a plan").await;
    assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
    let run = run_id(&opening);
    let suspended = suspensions(&opening);
    assert_eq!(suspended.len(), 1, "one suspension: {opening:?}");
    let suspended = &suspended[0];
    assert_eq!(suspended.tool_name, "ask_user");
    let question = ask_user_payload(suspended);
    assert!(
        question.options.iter().any(|o| o.label == "Pro"),
        "the question offers Pro: {question:?}"
    );
    let last_seq = opening.last().unwrap().seq;
    assert_eq!(
        seqs(&opening),
        (1..=last_seq).collect::<Vec<_>>(),
        "seqs of the first stream"
    );

    // The suspension was acknowledged; a crash right now must not lose it.
    drop(client);
    first.kill_hard();

    // Second process on the same data dir.
    let second = ServerProcess::start(data.path());
    assert_ne!(second.pid(), first.pid());
    let mut client = second.client().await;
    let stored = get_run(&mut client, &run).await;
    assert_eq!(status_of(&stored), pb::RunStatus::Suspended);
    assert_eq!(stored.run_id, run);
    assert_eq!(stored.last_seq, last_seq);
    assert_eq!(stored.pending.len(), 1, "pending calls: {:?}", stored.pending);
    let pending = &stored.pending[0];
    assert_eq!(pending.tool_call_id, suspended.tool_call_id);
    assert_eq!(pending.tool_name, "ask_user");
    assert!(!pending.awaiting_approval);
    assert_eq!(
        pending.suspend_payload, suspended.suspend_payload,
        "the payload survived the restart"
    );
    let stored_question = match pending.suspend_payload.as_ref().and_then(|p| p.kind.clone()) {
        Some(pb::suspend_payload::Kind::AskUser(payload)) => payload,
        other => panic!("pending call has no ask_user payload: {other:?}"),
    };
    assert_eq!(stored_question, question);

    // Resume it there.
    let answer = pb::resume_request::Answer::Text("Pro".into());
    let stream = client
        .resume(resume_request(&run, &pending.tool_call_id, answer))
        .await
        .expect("Resume")
        .into_inner();
    let resumed = collect(stream).await.expect("Resume stream");
    assert!(
        resumed.iter().all(|c| c.run_id == run),
        "every chunk names the run"
    );
    match resumed.first().and_then(|c| c.chunk.as_ref()) {
        Some(Chunk::Start(start)) => assert!(start.resumed, "start of a resumption: {start:?}"),
        other => panic!("the resumption must open with start: {other:?}"),
    }
    let results = tool_results(&resumed);
    assert_eq!(results.len(), 1, "one tool result: {resumed:?}");
    assert_eq!(results[0].tool_call_id, suspended.tool_call_id);
    assert_eq!(results[0].tool_name, "ask_user");
    assert_eq!(results[0].content, "User answered: Pro");
    assert!(!results[0].is_error);
    assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);
    let final_text = finish(&resumed).text;
    assert!(final_text.contains("Pro"), "final text: {final_text:?}");
    assert!(
        text(&resumed).contains("Pro"),
        "streamed text: {:?}",
        text(&resumed)
    );

    // seq continues across the restart, without gap or repeat.
    let end = resumed.last().unwrap().seq;
    assert_eq!(
        seqs(&resumed),
        (last_seq + 1..=end).collect::<Vec<_>>(),
        "seqs of the resumption"
    );

    let done = get_run(&mut client, &run).await;
    assert_eq!(status_of(&done), pb::RunStatus::Completed);
    assert!(done.pending.is_empty(), "no pending calls: {:?}", done.pending);
    assert_eq!(done.last_seq, end);
    assert!(
        done.final_text.contains("Pro"),
        "final text: {:?}",
        done.final_text
    );
}

/// SIGTERM stops the server cleanly: exit status 0 within a few seconds,
/// even with a client connected, and the run it served is intact.
#[tokio::test]
async fn sigterm_shuts_down_gracefully() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut server = ServerProcess::start(data.path());
    let mut client = server.client().await;
    let opening = stream_prompt(&mut client, "Help me pick a plan").await;
    assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
    let run = run_id(&opening);

    // The client stays connected while the server shuts down.
    let status = server.terminate(Duration::from_secs(10)).await;
    assert!(
        status.success(),
        "agentd exited with {status}\n{}",
        server.log_text()
    );
    assert!(
        server.log_text().contains("agentd stopped"),
        "agentd logs its stop:\n{}",
        server.log_text()
    );
    drop(client);

    // The suspended run is still there for the next process.
    let next = ServerProcess::start(data.path());
    let mut client = next.client().await;
    let stored = get_run(&mut client, &run).await;
    assert_eq!(status_of(&stored), pb::RunStatus::Suspended);
    assert_eq!(stored.last_seq, opening.last().unwrap().seq);
}
