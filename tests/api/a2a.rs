//! agentd's agents as A2A agents, driven by the official A2A Python SDK
//! (`tests/a2a/a2a_client_test.py`: the card, a single-select question
//! answered with text, an invalid answer refused, a multi-select one
//! answered with a data part, cancel, resubscribe, unknown tasks, another
//! tenant's task) against real servers, one open and one with API keys.

use std::process::Command;

use crate::helpers::TestServer;
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
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/a2a/a2a_client_test.py");
    let (open_addr, keyed_addr) = (open.addr.to_string(), keyed.addr.to_string());
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .args(["--open", &open_addr, "--keyed", &keyed_addr])
            .args(["--acme-key", ACME_KEY, "--globex-key", GLOBEX_KEY])
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
