//! `agentd chat`, the terminal client, run as a real process against a test
//! server: in a pseudo-terminal, answering a single-select and a
//! multi-select question by keystrokes; and without a terminal, with
//! `--answer` (a rejected answer first), `--json`, no answer at all, and an
//! API key.

use std::net::SocketAddr;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use expectrl::{Eof, Expect, Session};
use tokio::net::TcpListener;
use tokio::process::Command;

use crate::helpers::{settings_in, status_of, TestServer};
use agentd::pb;
use agentd::server::{self, ServeOptions};

const AGENTD: &str = env!("CARGO_BIN_EXE_agentd");
const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const CTRL_D: &str = "\x04";

/// Runs `agentd chat ARGS` without a terminal (stdin closed) and returns
/// (success, stdout, stderr).
async fn chat(server: &TestServer, args: &[&str]) -> (bool, String, String) {
    chat_with(server.addr, args).await
}

async fn chat_with(addr: SocketAddr, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(AGENTD)
        .arg("chat")
        .arg("--target")
        .arg(addr.to_string())
        .env_remove("AGENTD_API_KEY")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("agentd chat finished in time")
        .expect("agentd chat ran");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn keystrokes_answer_a_single_and_a_multi_select_question_in_a_terminal() {
    let server = TestServer::start().await;
    let target = server.addr.to_string();
    let transcript = tokio::task::spawn_blocking(move || -> Result<(), expectrl::Error> {
        let mut command = StdCommand::new(AGENTD);
        command.args(["chat", "--target", &target]);
        let mut chat = Session::spawn(command)?;
        chat.set_expect_timeout(Some(Duration::from_secs(30)));

        chat.expect("you> ")?;
        chat.send(format!("Help me pick a plan{ENTER}"))?;
        // The list, with the options' descriptions, the first one pointed at.
        chat.expect("Which plan should I set up for you?")?;
        chat.expect("> Basic")?;
        chat.expect("Unlimited projects, email support")?;
        chat.send(DOWN)?;
        chat.expect("> Pro")?;
        chat.send(ENTER)?;
        chat.expect("Thanks! You answered: Pro.")?;

        chat.expect("you> ")?;
        chat.send(format!("Order me a pizza, multi toppings{ENTER}"))?;
        chat.expect("Which toppings do you want on your pizza?")?;
        chat.expect("> [ ] Mushrooms")?;
        chat.send(" ")?;
        chat.expect("> [x] Mushrooms")?;
        for label in ["Olives", "Peppers", "Basil"] {
            chat.send(DOWN)?;
            chat.expect(format!("> [ ] {label}"))?;
        }
        chat.send(" ")?;
        chat.expect("> [x] Basil")?;
        chat.send(ENTER)?;
        chat.expect("Thanks! You answered: Mushrooms, Basil.")?;

        chat.expect("you> ")?;
        chat.send(CTRL_D)?;
        chat.expect(Eof)?;
        Ok(())
    })
    .await
    .expect("the terminal session ran");
    transcript.expect("the chat went as typed");

    // Both runs completed on the server with those answers.
    let runs = server
        .client()
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("ListRuns")
        .into_inner()
        .runs;
    assert_eq!(runs.len(), 2);
    let mut finals: Vec<&str> = runs.iter().map(|run| run.final_text.as_str()).collect();
    finals.sort_unstable();
    assert_eq!(
        finals,
        [
            "Thanks! You answered: Mushrooms, Basil.",
            "Thanks! You answered: Pro."
        ]
    );
    assert!(runs.iter().all(|run| status_of(run) == pb::RunStatus::Completed));
}

#[tokio::test]
async fn answers_given_as_arguments_are_used_in_order_and_a_rejected_one_is_skipped() {
    let server = TestServer::start().await;
    let (ok, stdout, stderr) = chat(
        &server,
        &["--answer", "Gold", "--answer", "Pro", "Help me pick a plan"],
    )
    .await;
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("? Which plan should I set up for you?"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Pro - Unlimited projects, email support"),
        "{stdout}"
    );
    assert!(
        stdout.contains("answer rejected: invalid answer: text: \"Gold\" is not one of the options"),
        "{stdout}"
    );
    assert!(stdout.contains("Basic, Pro, Enterprise"), "{stdout}");
    assert!(
        stdout.trim_end().ends_with("Thanks! You answered: Pro."),
        "{stdout}"
    );
}

#[tokio::test]
async fn json_prints_every_chunk_as_a_line_in_the_proto_json_mapping() {
    let server = TestServer::start().await;
    let (ok, stdout, stderr) = chat(
        &server,
        &[
            "--json",
            "--answer",
            "Mushrooms, Basil",
            "Order me a pizza, multi toppings",
        ],
    )
    .await;
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}")))
        .collect();
    let seqs: Vec<&str> = lines
        .iter()
        .map(|line| line["seq"].as_str().expect("seq"))
        .collect();
    let expected: Vec<String> = (1..=lines.len()).map(|seq| seq.to_string()).collect();
    assert_eq!(seqs, expected, "one line per chunk, none missing");
    let suspended = lines
        .iter()
        .find(|line| line.get("toolCallSuspended").is_some())
        .expect("a suspension");
    let ask = &suspended["toolCallSuspended"]["suspendPayload"]["askUser"];
    assert_eq!(ask["selectionMode"], "SELECTION_MODE_MULTI_SELECT");
    let finishes: Vec<&str> = lines
        .iter()
        .filter_map(|line| line["finish"]["reason"].as_str())
        .collect();
    assert_eq!(finishes, ["FINISH_REASON_SUSPENDED", "FINISH_REASON_STOP"]);
    let last = lines.last().expect("lines");
    assert_eq!(last["finish"]["text"], "Thanks! You answered: Mushrooms, Basil.");
    // The person's side went to stderr.
    assert!(
        stderr.contains("Which toppings do you want on your pizza?"),
        "{stderr}"
    );
}

#[tokio::test]
async fn without_an_answer_the_run_is_left_suspended() {
    let server = TestServer::start().await;
    let (ok, stdout, stderr) = chat(&server, &["free text please"]).await;
    assert!(!ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("no answer for \"What should I call you?\""),
        "{stderr}"
    );
    let runs = server
        .client()
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("ListRuns")
        .into_inner()
        .runs;
    assert_eq!(runs.len(), 1);
    assert_eq!(status_of(&runs[0]), pb::RunStatus::Suspended);
    assert!(stderr.contains(&runs[0].run_id), "{stderr}");
}

#[tokio::test]
async fn an_api_key_is_sent_as_a_bearer_token() {
    const KEY: &str = "chat-key-5e0c2b7a91d4f638";
    let dir = tempfile::tempdir().expect("temp dir");
    let keys = dir.path().join("api.keys");
    std::fs::write(&keys, format!("acme:{KEY}\n")).expect("keys file");
    let mut settings = settings_in(dir.path());
    settings.auth.api_keys_file = Some(keys);
    let options = ServeOptions::from_settings(&settings).expect("options");
    let runtime = server::build_runtime(&settings).await.expect("runtime");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (_stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server::serve_with(listener, runtime, options, async {
        let _ = stopped.await;
    }));

    let (ok, _, stderr) = chat_with(addr, &["--answer", "Pro", "Help me pick a plan"]).await;
    assert!(!ok);
    assert!(stderr.contains("Unauthenticated"), "{stderr}");

    let (ok, stdout, stderr) = chat_with(
        addr,
        &["--api-key", KEY, "--answer", "Pro", "Help me pick a plan"],
    )
    .await;
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("Thanks! You answered: Pro."), "{stdout}");
}

#[tokio::test]
async fn a_thread_carries_the_conversation_across_chats_and_a_message_answers_its_question() {
    let server = TestServer::start().await;
    let (ok, stdout, stderr) = chat(
        &server,
        &["--thread", "plans", "--answer", "Pro", "Help me pick a plan"],
    )
    .await;
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("Thanks! You answered: Pro."), "{stdout}");

    // A later chat on the thread: the model sees the earlier run.
    let (ok, stdout, stderr) = chat(&server, &["--thread", "plans", "recap"]).await;
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("Earlier messages: \"Help me pick a plan\". Answers: Pro."),
        "{stdout}"
    );

    // Left waiting on a question, the thread's next message answers it
    // (here by the option's number).
    let (ok, _, stderr) = chat(&server, &["--thread", "later", "Help me pick a plan"]).await;
    assert!(!ok && stderr.contains("no answer for"), "{stderr}");
    let (ok, stdout, stderr) = chat(&server, &["--thread", "later", "2"]).await;
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("Thanks! You answered: Pro."), "{stdout}");
    let thread = server
        .client()
        .get_thread(pb::GetThreadRequest {
            thread_id: "later".into(),
        })
        .await
        .expect("GetThread")
        .into_inner();
    assert_eq!(thread.run_ids.len(), 1, "answered, not a second run: {thread:?}");
}
