//! A real `agentd` process for the tests that need one (restarts, crashes,
//! replicas, signals, logs): started on an ephemeral port, its log read for
//! its whole life and printed if the test fails, killed (SIGKILL) when
//! dropped so that a failing test never leaves a server behind.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::pb::{self, AgentChunk};
use tonic::transport::Channel;

use crate::helpers::collect;

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
    pub(crate) fn start(data_dir: &Path) -> Self {
        Self::start_with(data_dir, &[], &[])
    }

    /// [`ServerProcess::start`] with more arguments and environment
    /// variables.
    pub(crate) fn start_with(data_dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Self {
        Self::start_labelled(None, data_dir, args, envs)
    }

    /// [`ServerProcess::start_with`], its log lines prefixed with
    /// `[label]` (to tell several processes apart in a failure's output).
    pub(crate) fn start_labelled(
        label: Option<&str>,
        data_dir: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
        command.args(args);
        Self::spawn(label, command, data_dir, envs)
    }

    /// A server whose data dir is a fresh tmpfs of `mib` MiB mounted on
    /// `mount` (an empty folder), in a user and mount namespace of its own
    /// (`unshare -rm`: no privilege needed where user namespaces are
    /// allowed). Its files are reached from outside through
    /// [`ServerProcess::in_mount`].
    pub(crate) fn start_in_tmpfs(mount: &Path, mib: u32) -> Self {
        let mut command = Command::new("unshare");
        command
            .args(["-rm", "sh", "-c"])
            .arg(format!(
                "mount -t tmpfs -o size={mib}m agentd-test \"$0\" && exec \"$@\""
            ))
            .arg(mount)
            .arg(env!("CARGO_BIN_EXE_agentd"));
        Self::spawn(None, command, &mount.join("data"), &[])
    }

    /// `path` (under the mount of [`ServerProcess::start_in_tmpfs`]) as this
    /// process sees it.
    pub(crate) fn in_mount(&self, path: &Path) -> std::path::PathBuf {
        let relative = path.strip_prefix("/").unwrap_or(path);
        Path::new("/proc")
            .join(self.pid().to_string())
            .join("root")
            .join(relative)
    }

    fn spawn(label: Option<&str>, mut command: Command, data_dir: &Path, envs: &[(&str, &str)]) -> Self {
        // Settings from the environment must not leak into the test.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("AGENTD_") {
                command.env_remove(name);
            }
        }
        // An ephemeral port on the loopback address unless the test names
        // its own address.
        if !command.get_args().any(|arg| arg == "--listen") {
            command.arg("--listen").arg("127.0.0.1:0");
        }
        let mut child = command
            .envs(envs.iter().copied())
            .arg("--data-dir")
            .arg(data_dir)
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
        let prefix = label.map(|label| format!("[{label}] ")).unwrap_or_default();
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
                    log.lock().unwrap().push(format!("{prefix}{line}"));
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

    /// A connection to the process, for any service's client.
    pub(crate) async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.addr))
            .expect("uri")
            .connect()
            .await
            .expect("connect to agentd")
    }

    /// Waits (at most 10 s) until the process's log passes `done`, and
    /// returns it.
    pub(crate) async fn wait_for_log(&self, done: impl Fn(&str) -> bool) -> String {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let log = self.log_text();
            if done(&log) {
                return log;
            }
            assert!(Instant::now() < give_up, "the log never got there:\n{log}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) async fn client(&self) -> AgentServiceClient<Channel> {
        AgentServiceClient::connect(format!("http://{}", self.addr))
            .await
            .expect("connect to agentd")
            .max_decoding_message_size(64 * 1024 * 1024)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown code runs, as in a crash or an OOM kill.
    pub(crate) fn kill_hard(&mut self) {
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

#[test]
fn strip_ansi_and_parse_listen_line() {
    let coloured = "\u{1b}[2m2025-01-01T00:00:00Z\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2magentd\u{1b}[0m\u{1b}[2m:\u{1b}[0m agentd listening on 127.0.0.1:43210 \u{1b}[3mstore\u{1b}[0m\u{1b}[2m=\u{1b}[0msqlite://x";
    let plain = strip_ansi(coloured);
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    assert_eq!(listen_address(&plain), Some("127.0.0.1:43210".parse().unwrap()));
    assert_eq!(listen_address("INFO agentd: shutting down"), None);
    let json = r#"{"level":"INFO","fields":{"message":"agentd listening on 127.0.0.1:43210","tls":false}}"#;
    assert_eq!(listen_address(json), Some("127.0.0.1:43210".parse().unwrap()));
}

// The calls the tests make to such a process.

pub(crate) async fn start_run(
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

pub(crate) async fn stream_prompt(client: &mut AgentServiceClient<Channel>, prompt: &str) -> Vec<AgentChunk> {
    collect(start_run(client, prompt).await)
        .await
        .expect("StreamAgent stream")
}

pub(crate) async fn subscribe(
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

pub(crate) async fn get_run(client: &mut AgentServiceClient<Channel>, run_id: &str) -> pb::Run {
    let request = pb::GetRunRequest {
        run_id: run_id.into(),
    };
    client.get_run(request).await.expect("GetRun").into_inner()
}

pub(crate) fn seqs(chunks: &[AgentChunk]) -> Vec<u64> {
    chunks.iter().map(|c| c.seq).collect()
}
