//! A real gRPC-Web client: `web/test/grpc_web.ts` drives a server with
//! @connectrpc/connect-web's gRPC-Web transport under Node (unary calls,
//! StreamAgent, Resume and SubscribeRun streams, a refusal); `web/test/schema.ts`
//! unit-tests the page's schema-to-form mapping and its plain words for refusals.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::security::server::SecureServer;

/// The web app's folder, where `npm ci` put the packages the scripts use.
pub(crate) fn web_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("web")
}

/// One script at a time: the browser tests measure timing and layout
/// shift, which Chromiums fighting over the cores would distort.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs `web/test/run.mjs SCRIPT ARGS` with Node (one script at a time in
/// this process) and fails the test with its output unless it succeeds.
pub(crate) fn run_script(script: &str, args: &[&str]) {
    // A script that failed in another test leaves the lock poisoned; the
    // next one runs all the same.
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = web_dir();
    assert!(
        dir.join("node_modules").is_dir(),
        "the web app's packages are missing: run `npm ci` in {}",
        dir.display()
    );
    let output = Command::new("node")
        .current_dir(&dir)
        .arg("test/run.mjs")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|error| panic!("running node (is Node on PATH?): {error}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    print!("{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs Node and `npm ci` in web/; .ci/run runs it"]
async fn connect_web_runs_an_ask_user_cycle() {
    let server = SecureServer::start(|_, _| {}).await;
    let base = format!("http://{}", server.addr);
    tokio::task::spawn_blocking(move || run_script("grpc_web.ts", &[&base]))
        .await
        .expect("the script's task");
}

#[test]
#[ignore = "needs Node and `npm ci` in web/; .ci/run runs it"]
fn the_schema_to_form_mapping() {
    run_script("schema.ts", &[]);
}
