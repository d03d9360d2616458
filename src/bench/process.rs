//! The servers the bench measures, each a separate process started from
//! this executable, plus what the bench reads about them from the outside:
//! resident memory (/proc) and the size of their data folder.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, Command};

/// How long a server gets to log its address (the ceiling service first
/// records an agentd cycle, which a debug build takes a moment for).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A fresh folder under the system temp folder, removed when dropped.
pub(super) struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    pub(super) fn new(label: &str) -> anyhow::Result<Self> {
        let path = std::env::temp_dir().join(format!(
            "agentd-bench-{label}-{}-{}",
            std::process::id(),
            uuid::Uuid::now_v7().simple()
        ));
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Self { path })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes in the folder's files (the SQLite database and its WAL), as
    /// they are: nothing is checkpointed first.
    pub(super) fn file_bytes(&self) -> anyhow::Result<Vec<(String, u64)>> {
        let mut files = Vec::new();
        for entry in
            std::fs::read_dir(&self.path).with_context(|| format!("reading {}", self.path.display()))?
        {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_file() {
                files.push((entry.file_name().to_string_lossy().into_owned(), meta.len()));
            }
        }
        files.sort();
        Ok(files)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A server process the bench started; killed when dropped.
pub(super) struct ServerProcess {
    child: Child,
    pub addr: SocketAddr,
    pub pid: u32,
}

impl ServerProcess {
    /// Starts agentd serving on an ephemeral loopback port with its store
    /// in `data_dir`.
    /// in `data_dir`, or in the store `store` names.
    pub(super) async fn agentd(data_dir: &Path, store: Option<&str>) -> anyhow::Result<Self> {
        let dir = data_dir.to_string_lossy().into_owned();
        let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--data-dir", &dir];
        if let Some(store) = store {
            args.extend(["--store", store]);
        }
        Self::spawn(&args).await
    }

    /// Starts the ceiling service on an ephemeral loopback port, storing in
    /// `data_dir`'s SQLite database or in the PostgreSQL database `store`.
    pub(super) async fn ceiling(
        data_dir: &Path,
        sync: &str,
        naive: bool,
        store: Option<&str>,
    ) -> anyhow::Result<Self> {
        let dir = data_dir.to_string_lossy().into_owned();
        let mut args = vec![
            "bench",
            "ceiling-server",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &dir,
            "--ceiling-sync",
            sync,
        ];
        if naive {
            args.push("--ceiling-naive");
        }
        if let Some(store) = store {
            args.extend(["--store", store]);
        }
        Self::spawn(&args).await
    }

    async fn spawn(args: &[&str]) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("finding the agentd executable")?;
        let mut child = Command::new(&exe)
            .args(args)
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} {}", exe.display(), args.join(" ")))?;
        let pid = child.id().context("the server exited at once")?;
        let stderr = child.stderr.take().context("no stderr pipe")?;
        let mut lines = BufReader::new(stderr).lines();
        let addr = tokio::time::timeout(READY_TIMEOUT, listening_address(&mut lines))
            .await
            .with_context(|| format!("the server did not log its address within {READY_TIMEOUT:?}"))??;
        // Keep reading its log so the server never blocks on a full pipe,
        // as cheaply as a read can be: the bench shares the server's cores.
        let mut rest = lines.into_inner();
        tokio::spawn(async move { tokio::io::copy(&mut rest, &mut tokio::io::sink()).await });
        Ok(Self { child, addr, pid })
    }

    /// The server's resident memory, from /proc/PID/status.
    pub(super) fn memory(&self) -> Option<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kb| kb.parse::<u64>().ok())
                .map(|kb| kb * 1024)
        };
        Some(Memory {
            rss: field("VmRSS:")?,
            peak: field("VmHWM:")?,
        })
    }

    /// CPU seconds the server has used so far.
    pub(super) fn cpu_seconds(&self) -> Option<f64> {
        cpu_seconds(self.pid)
    }

    /// Kills the server and waits for it to go.
    pub(super) async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// Clock ticks per second of /proc's CPU times (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds (user and system, every thread) process `pid` has used,
/// from /proc/PID/stat.
pub(super) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: fields are
    // counted from its closing one (utime and stime are fields 14 and 15).
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some((user + system) as f64 / TICKS_PER_SECOND)
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Memory {
    /// Resident set size now.
    pub rss: u64,
    /// The highest resident set size so far.
    pub peak: u64,
}

/// Reads the server's log until it says `listening on ADDR`.
async fn listening_address(lines: &mut Lines<BufReader<ChildStderr>>) -> anyhow::Result<SocketAddr> {
    let mut seen = Vec::new();
    while let Some(line) = lines.next_line().await? {
        if let Some(rest) = line.split("listening on ").nth(1) {
            let word = rest.split_whitespace().next().unwrap_or_default();
            return word
                .parse()
                .with_context(|| format!("unreadable address in {line:?}"));
        }
        seen.push(line);
    }
    bail!("the server exited before listening:\n{}", seen.join("\n"))
}
