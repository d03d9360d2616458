//! agentd's agents as A2A agents, driven by the official A2A Python SDK
//! (`tests/a2a/a2a_client_test.py`: the card and its three interfaces; on
//! each binding, JSON-RPC, HTTP+JSON and gRPC, a single-select question
//! answered with text, an invalid answer refused as InvalidParamsError, a
//! multi-select one answered with a data part, cancel, resubscribe,
//! unknown tasks, another tenant's task, push notification configs and
//! their pushes, ListTasks' counts and filters; a task started over
//! JSON-RPC and answered over gRPC; what a request without `A2A-Version`
//! gets) against real servers: one open, one with API keys, and one whose
//! pushes may go to private addresses (the script's receiver listens on
//! 127.0.0.1).

use std::net::SocketAddr;
use std::process::Command;

use agentd::server::{self, ServeOptions};
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
    let open = TestServer::start().await;
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
