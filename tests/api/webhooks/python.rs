//! The webhooks guide's Python receiver, run for real against agentd: the
//! block after "**A receiver** in Python" in `docs/events-and-webhooks.md`
//! runs with the Standard Webhooks library (`pip install standardwebhooks`;
//! `.ci/run` installs it), verifies agentd's requests and prints the
//! question of a suspended run.

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::receiver::SECRET;
use super::{start_server, webhook_table, write_config};
use crate::process::stream_prompt;

/// The ```python block that follows `marker` in the webhooks guide.
fn guide_block(marker: &str) -> String {
    let guide = include_str!("../../../docs/events-and-webhooks.md");
    let after = &guide[guide.find(marker).expect("the guide's receiver")..];
    let start = after.find("```python\n").expect("a python block") + "```python\n".len();
    let end = after[start..].find("\n```").expect("the block's end");
    after[start..start + end].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Python with standardwebhooks (pip install standardwebhooks); .ci/run runs it"]
async fn the_guide_s_python_receiver_verifies_and_prints_the_question() {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("receiver.py");
    std::fs::write(&script, guide_block("**A receiver** in Python")).expect("write the receiver");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let mut receiver = Command::new("python3")
        .arg(&script)
        .env("AGENTD_WEBHOOK_SECRET", SECRET)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3");
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "the Python receiver never listened");
        assert!(
            receiver.try_wait().expect("try_wait").is_none(),
            "the receiver exited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let config = write_config(
        dir.path(),
        &[webhook_table(
            "python",
            &format!("http://127.0.0.1:{port}/hook"),
            "",
        )],
    );
    let server = start_server(&config, &dir.path().join("data"), &[]);
    let mut client = server.client().await;
    let run = stream_prompt(&mut client, "Help me pick a plan").await;
    let run_id = run[0].run_id.clone();

    let mut lines = BufReader::new(receiver.stdout.take().expect("stdout")).lines();
    let expected = format!("run.suspended: run {run_id} asks 'Which plan should I set up for you?'");
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the receiver printed the question")
        .expect("read")
        .expect("a line");
    assert_eq!(line, expected);
}
