//! What the `agentd` binary says when it cannot start: each mistake an
//! operator makes (a listen address, a variable, a data dir, a database, a
//! port in use) gets a message that names the setting, the path or the
//! address, and the cause, and nothing is announced before every listener
//! is bound. Each case runs the real binary and reads its stderr.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::Stdio;
use std::time::Duration;

use agentd::pb;

use crate::process::ServerProcess;

/// How long a server that cannot start takes to say so, at most.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `agentd` with `args` and `envs` (and no other `AGENTD_*` variable),
/// expects it to exit unsuccessfully, and returns its stderr.
pub(crate) async fn start_failing(program: &[&str], args: &[&str], envs: &[(&str, &str)]) -> String {
    let (program, leading) = match program.split_first() {
        Some((program, leading)) => (*program, leading),
        None => (env!("CARGO_BIN_EXE_agentd"), &[][..]),
    };
    let mut command = tokio::process::Command::new(program);
    command.args(leading);
    if !leading.is_empty() {
        command.arg(env!("CARGO_BIN_EXE_agentd"));
    }
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("AGENTD_") {
            command.env_remove(name);
        }
    }
    command
        .args(args)
        .envs(envs.iter().copied())
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(EXIT_TIMEOUT, command.output())
        .await
        .expect("agentd should stop at once")
        .expect("run agentd");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "agentd should have failed to start:\n{stderr}"
    );
    stderr
}

/// Asserts `stderr` holds `message` and does not announce a server.
/// Starts the binary with `config` as its `agentd.toml` (its store in a
/// folder of its own), expecting it to fail; its stderr.
pub(crate) async fn start_failing_with_config(config: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("agentd.toml");
    std::fs::write(&path, config).expect("write agentd.toml");
    let data = dir.path().join("data");
    start_failing(
        &[],
        &[
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().expect("a UTF-8 path"),
            "--config",
            path.to_str().expect("a UTF-8 path"),
        ],
        &[],
    )
    .await
}

pub(crate) fn says(stderr: &str, message: &str) {
    assert!(
        stderr.contains(message),
        "expected {message:?} in the output:\n{stderr}"
    );
    assert!(!stderr.contains("agentd listening"), "{stderr}");
}

#[tokio::test]
async fn a_listen_address_may_name_a_host() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with(
        dir.path(),
        &["--listen", "localhost:0", "--store", "memory:"],
        &[],
    );
    assert!(server.addr.ip().is_loopback(), "{}", server.addr);
    let agents = server
        .client()
        .await
        .list_agents(pb::ListAgentsRequest {})
        .await
        .expect("ListAgents")
        .into_inner();
    assert_eq!(agents.agents[0].agent_id, "assistant");
}

#[tokio::test]
async fn a_malformed_listen_address_says_how_to_write_one() {
    let stderr = start_failing(&[], &["--listen", "localhost"], &[]).await;
    says(
        &stderr,
        "invalid value 'localhost' for '--listen <ADDR>': \"localhost\" has no port: write HOST:PORT, \
         e.g. 127.0.0.1:50051, [::1]:50051 or localhost:50051",
    );
    let stderr = start_failing(&[], &[], &[("AGENTD_LISTEN", "localhost:http")]).await;
    says(
        &stderr,
        "environment variable AGENTD_LISTEN: \"localhost:http\": the port \"http\" is not a number \
         from 0 to 65535",
    );
}

#[tokio::test]
async fn an_invalid_variable_is_named_not_the_flag() {
    let stderr = start_failing(&[], &["--store", "memory:"], &[("AGENTD_LOG_FORMAT", "xml")]).await;
    says(
        &stderr,
        "environment variable AGENTD_LOG_FORMAT: \"xml\": expected text or json",
    );
    assert!(!stderr.contains("--log-format"), "{stderr}");
    let stderr = start_failing(&[], &["--store", "memory:"], &[("AGENTD_SUSPEND_TTL", "soon")]).await;
    says(
        &stderr,
        "environment variable AGENTD_SUSPEND_TTL: invalid duration \"soon\"",
    );
}

#[tokio::test]
async fn a_data_dir_that_is_a_file_is_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agentd-data");
    std::fs::write(&file, "not a folder").unwrap();
    let stderr = start_failing(
        &[],
        &["--listen", "127.0.0.1:0", "--data-dir", file.to_str().unwrap()],
        &[],
    )
    .await;
    says(
        &stderr,
        &format!(
            "opening the run store: store unavailable: {} is not a directory (it is to hold the \
             SQLite database {})",
            file.display(),
            file.join("agentd.sqlite3").display()
        ),
    );
    // A parent that is a file is named.
    let nested = file.join("data");
    let stderr = start_failing(
        &[],
        &["--listen", "127.0.0.1:0", "--data-dir", nested.to_str().unwrap()],
        &[],
    )
    .await;
    says(
        &stderr,
        &format!(
            "{} is not a directory (it is to hold the SQLite database {})",
            file.display(),
            nested.join("agentd.sqlite3").display()
        ),
    );
}

#[tokio::test]
async fn an_unwritable_data_dir_says_permission_denied_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o555)).unwrap();
    // Root writes anywhere: as root, the server runs as nobody, who may
    // enter the folders but not write in them.
    let root = std::fs::metadata(dir.path()).unwrap().uid() == 0;
    let program: &[&str] = if root {
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        &["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    } else {
        &[]
    };
    let stderr = start_failing(
        program,
        &["--listen", "127.0.0.1:0", "--data-dir", data.to_str().unwrap()],
        &[],
    )
    .await;
    says(
        &stderr,
        &format!(
            "opening the run store: store unavailable: cannot write in the directory {} (it holds \
             the SQLite database {}): Permission denied (os error 13)",
            data.display(),
            data.join("agentd.sqlite3").display()
        ),
    );
}

#[tokio::test]
async fn an_unreachable_postgres_is_named_with_the_cause() {
    // Nothing listens on port 1 of the loopback address.
    let stderr = start_failing(
        &[],
        &[
            "--listen",
            "127.0.0.1:0",
            "--store",
            "postgres://agentd@127.0.0.1:1/agentd",
        ],
        &[],
    )
    .await;
    says(
        &stderr,
        "opening the run store: store unavailable: cannot connect to PostgreSQL at 127.0.0.1:1 \
         (user agentd, database agentd): error connecting to server: Connection refused (os error 111)",
    );
}

#[tokio::test]
async fn a_metrics_port_in_use_stops_the_server_before_it_announces_anything() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let stderr = start_failing(
        &[],
        &[
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory:",
            "--metrics-listen",
            &address,
        ],
        &[],
    )
    .await;
    says(
        &stderr,
        &format!("binding the metrics endpoint {address}: Address already in use (os error 98)"),
    );
}

#[tokio::test]
async fn a_fatal_error_is_one_json_line_with_its_text_once_and_no_backtrace() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agentd.toml");
    std::fs::write(&config, "[server]\nlisten = 5\n").unwrap();
    let config = config.to_str().unwrap();
    let stderr = start_failing(
        &[],
        &["--log-format", "json", "--config", config],
        &[("RUST_BACKTRACE", "1")],
    )
    .await;
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert_eq!(lines[0]["level"], "ERROR", "{stderr}");
    let message = lines[0]["fields"]["message"].as_str().expect("a message");
    assert!(
        message.starts_with(&format!(
            "parsing {config}: TOML parse error at line 2, column 10"
        )),
        "{message}"
    );
    assert_eq!(message.matches("TOML parse error").count(), 1, "{message}");
    assert!(
        message.ends_with("invalid type: integer `5`, expected a string"),
        "{message}"
    );

    // As text, the same: once, without a backtrace.
    let stderr = start_failing(&[], &["--config", config], &[("RUST_BACKTRACE", "1")]).await;
    assert!(
        stderr.starts_with(&format!("Error: parsing {config}: TOML parse error")),
        "{stderr}"
    );
    assert_eq!(stderr.matches("TOML parse error").count(), 1, "{stderr}");
    assert!(
        !stderr.contains("Caused by") && !stderr.contains("backtrace"),
        "{stderr}"
    );
}
