//! `agentd chat`, the terminal client, run as a real process against a test
//! server: in a pseudo-terminal, answering a single-select and a
//! multi-select question by keystrokes, and an approval with `a` (always:
//! remembered in the conversation); and without a terminal, with
//! `--answer` (a rejected answer first, `always` outside a thread),
//! `--json`, no answer at all, and an API key.

use std::net::SocketAddr;
use std::process::{Command as StdCommand, Stdio};
use std::time::Duration;

use expectrl::{Eof, Expect, Session};
use tokio::process::Command;

use crate::helpers::{status_of, TestServer};
use crate::security::server::SecureServer;
use agentd::pb;

const AGENTD: &str = env!("CARGO_BIN_EXE_agentd");
const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const CTRL_D: &str = "\x04";

/// Runs `agentd chat ARGS` without a terminal (stdin closed), asserts it
/// succeeded, and returns (stdout, stderr).
async fn chat(server: &TestServer, args: &[&str]) -> (String, String) {
    chat_at(server.addr, args, true).await
}

/// Like [`chat`] for a chat that must fail.
async fn chat_fails(server: &TestServer, args: &[&str]) -> (String, String) {
    chat_at(server.addr, args, false).await
}

/// Runs `agentd chat ARGS` against `addr`, asserts whether it `succeeds`,
/// and returns (stdout, stderr).
async fn chat_at(addr: SocketAddr, args: &[&str], succeeds: bool) -> (String, String) {
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
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.success(),
        succeeds,
        "agentd chat {args:?} exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    (stdout, stderr)
}

/// Runs `agentd chat --target ADDR ARGS` in a pseudo-terminal, where
/// `script` types and expects (30 s at most each); what it returns.
async fn in_terminal<T: Send + 'static>(
    addr: SocketAddr,
    args: &[&str],
    script: impl FnOnce(&mut expectrl::session::OsSession) -> Result<T, expectrl::Error> + Send + 'static,
) -> T {
    let mut command = StdCommand::new(AGENTD);
    command.args(["chat", "--target", &addr.to_string()]).args(args);
    tokio::task::spawn_blocking(move || {
        let mut chat = Session::spawn(command)?;
        chat.set_expect_timeout(Some(Duration::from_secs(30)));
        script(&mut chat)
    })
    .await
    .expect("the terminal session ran")
    .expect("the chat went as typed")
}

/// Every run on `server`.
/// The exit status of a terminal session's chat, once it has ended.
fn exit_code(chat: &expectrl::session::OsSession) -> Option<i32> {
    match chat.get_process().wait() {
        Ok(expectrl::process::unix::WaitStatus::Exited(_, code)) => Some(code),
        _ => None,
    }
}

async fn runs(server: &TestServer) -> Vec<pb::Run> {
    server
        .client()
        .list_runs(pb::ListRunsRequest::default())
        .await
        .expect("ListRuns")
        .into_inner()
        .runs
}

#[tokio::test(flavor = "multi_thread")]
async fn keystrokes_answer_a_single_and_a_multi_select_question_in_a_terminal() {
    let server = TestServer::start().await;
    in_terminal(server.addr, &[], move |chat| {
        chat.expect("you> ")?;
        chat.send(format!("Help me pick a plan{ENTER}"))?;
        // The list, with the options' descriptions, the first one pointed at.
        chat.expect("Which plan should I set up for you?")?;
        chat.expect("> 1. Basic")?;
        chat.expect("Unlimited projects, email support")?;
        chat.send(DOWN)?;
        chat.expect("> 2. Pro")?;
        chat.send(ENTER)?;
        chat.expect("Thanks! You answered: Pro.")?;

        chat.expect("you> ")?;
        chat.send(format!("Order me a pizza, multi toppings{ENTER}"))?;
        chat.expect("Which toppings do you want on your pizza?")?;
        chat.expect("> [ ] 1. Mushrooms")?;
        chat.send(" ")?;
        chat.expect("> [x] 1. Mushrooms")?;
        for (number, label) in [(2, "Olives"), (3, "Peppers"), (4, "Basil")] {
            chat.send(DOWN)?;
            chat.expect(format!("> [ ] {number}. {label}"))?;
        }
        chat.send(" ")?;
        chat.expect("> [x] 4. Basil")?;
        chat.send(ENTER)?;
        chat.expect("Thanks! You answered: Mushrooms, Basil.")?;

        chat.expect("you> ")?;
        chat.send(CTRL_D)?;
        chat.expect(Eof)?;
        Ok(())
    })
    .await;

    // Both runs completed on the server with those answers.
    let runs = runs(&server).await;
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
    let (stdout, _) = chat(
        &server,
        &["--answer", "Gold", "--answer", "Pro", "Help me pick a plan"],
    )
    .await;
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
    let (stdout, stderr) = chat(
        &server,
        &[
            "--json",
            "--answer",
            "Mushrooms, Basil",
            "Order me a pizza, multi toppings",
        ],
    )
    .await;
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
    let (_, stderr) = chat_fails(&server, &["free text please"]).await;
    assert!(
        stderr.contains("no answer for \"What should I call you?\""),
        "{stderr}"
    );
    let runs = runs(&server).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(status_of(&runs[0]), pb::RunStatus::Suspended);
    assert!(stderr.contains(&runs[0].run_id), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn run_comes_back_to_a_question_left_open_and_a_number_picks_an_option() {
    let server = TestServer::start().await;
    let (_, stderr) = chat_fails(&server, &["Help me pick a plan"]).await;
    let run_id = runs(&server).await[0].run_id.clone();
    assert!(
        stderr.contains(&format!("`agentd chat --run {run_id}` comes back to it")),
        "{stderr}"
    );

    // At a terminal the options are numbered, and a digit picks one.
    in_terminal(server.addr, &["--run", &run_id], move |chat| {
        chat.expect("Which plan should I set up for you?")?;
        chat.expect("3. Enterprise")?;
        chat.send("3")?;
        chat.expect("Thanks! You answered: Enterprise.")?;
        chat.expect(Eof)?;
        Ok(())
    })
    .await;
    assert_eq!(status_of(&runs(&server).await[0]), pb::RunStatus::Completed);

    // A run that asks nothing is said to.
    let (stdout, stderr) = chat(&server, &["--run", &run_id]).await;
    assert!(
        format!("{stdout}{stderr}").contains(&format!("run {run_id} is completed: it asks nothing")),
        "{stdout}{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_while_streaming_says_how_to_come_back_and_exits_130() {
    let server = TestServer::start().await;
    let status = in_terminal(server.addr, &["stream 1000 every 20 ms"], move |chat| {
        chat.expect("token3 ")?;
        chat.send("\x03")?;
        chat.expect("stopped following run ")?;
        chat.expect("it goes on on the server. `agentd chat --run ")?;
        chat.expect(Eof)?;
        Ok(exit_code(chat))
    })
    .await;
    assert_eq!(status, Some(130));
}

#[tokio::test]
async fn an_api_key_is_sent_as_a_bearer_token() {
    const KEY: &str = "chat-key-5e0c2b7a91d4f638";
    let server = SecureServer::with_keys(&format!("acme:{KEY}\n")).await;
    let addr = server.addr;

    let (_, stderr) = chat_at(addr, &["--answer", "Pro", "Help me pick a plan"], false).await;
    assert!(stderr.contains("Unauthenticated"), "{stderr}");

    let (stdout, _) = chat_at(
        addr,
        &["--api-key", KEY, "--answer", "Pro", "Help me pick a plan"],
        true,
    )
    .await;
    assert!(stdout.contains("Thanks! You answered: Pro."), "{stdout}");
}

#[tokio::test]
async fn a_thread_carries_the_conversation_across_chats_and_a_message_answers_its_question() {
    let server = TestServer::start().await;
    let (stdout, _) = chat(
        &server,
        &["--thread", "plans", "--answer", "Pro", "Help me pick a plan"],
    )
    .await;
    assert!(stdout.contains("Thanks! You answered: Pro."), "{stdout}");

    // A later chat on the thread: the model sees the earlier run.
    let (stdout, _) = chat(&server, &["--thread", "plans", "recap"]).await;
    assert!(
        stdout.contains("Earlier messages: \"Help me pick a plan\". Answers: Pro."),
        "{stdout}"
    );

    // Left waiting on a question, the thread's next message answers it
    // (here by the option's number).
    let (_, stderr) = chat_fails(&server, &["--thread", "later", "Help me pick a plan"]).await;
    assert!(stderr.contains("no answer for"), "{stderr}");
    let (stdout, _) = chat(&server, &["--thread", "later", "2"]).await;
    assert!(stdout.contains("Thanks! You answered: Pro."), "{stdout}");
    let thread = crate::threads::get_thread(&server, "later")
        .await
        .expect("GetThread");
    assert_eq!(thread.run_ids.len(), 1, "answered, not a second run: {thread:?}");
}

const ESC: &str = "\x1b";

#[tokio::test(flavor = "multi_thread")]
async fn esc_at_a_question_leaves_it_open_and_a_later_chat_in_the_thread_asks_it_again() {
    let server = TestServer::start().await;
    let left = in_terminal(server.addr, &["--thread", "naming"], move |chat| {
        chat.expect("you> ")?;
        // An empty message is not sent: the prompt says what it wants.
        chat.send(ENTER)?;
        chat.expect("(type a message and press Enter; Ctrl-D ends the chat)")?;
        chat.send(format!("free text please{ENTER}"))?;
        chat.expect("What should I call you?")?;
        // An empty answer neither.
        chat.send(ENTER)?;
        chat.expect("(type an answer and press Enter; Esc leaves the question open)")?;
        chat.send(ESC)?;
        chat.expect("left the question open: run ")?;
        chat.expect("stays suspended; come back to it with `agentd chat --thread naming`")?;
        chat.expect(Eof)?;
        Ok(exit_code(chat))
    })
    .await;
    assert_eq!(left, Some(0), "leaving a question open is a normal end");
    let suspended = runs(&server).await;
    assert_eq!(suspended.len(), 1);
    assert_eq!(status_of(&suspended[0]), pb::RunStatus::Suspended);

    // Back in the thread, the question comes first, and is answered.
    let run_id = suspended[0].run_id.clone();
    in_terminal(server.addr, &["--thread", "naming"], move |chat| {
        chat.expect(format!("thread naming waits on an answer (run {run_id})"))?;
        chat.expect("What should I call you?")?;
        chat.send(format!("Ada{ENTER}"))?;
        chat.expect("Thanks! You answered: Ada.")?;
        chat.expect("you> ")?;
        chat.send(CTRL_D)?;
        chat.expect(Eof)?;
        Ok(())
    })
    .await;
    let runs = runs(&server).await;
    assert_eq!(runs.len(), 1, "answered, not a second run");
    assert_eq!(status_of(&runs[0]), pb::RunStatus::Completed);
}

#[tokio::test]
async fn without_a_terminal_a_thread_waiting_on_a_question_is_described_first() {
    let server = TestServer::start().await;
    chat_fails(&server, &["--thread", "plans", "Help me pick a plan"]).await;
    let (stdout, _) = chat(&server, &["--thread", "plans"]).await;
    assert!(stdout.contains("thread plans waits on an answer"), "{stdout}");
    assert!(
        stdout.contains("? Which plan should I set up for you?"),
        "{stdout}"
    );
    assert!(stdout.contains("(the next message answers it)"), "{stdout}");
}

/// A server whose `careful` agent asks before each ask_user call.
async fn careful_server() -> (TestServer, tempfile::TempDir) {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = crate::helpers::settings_in(temp.path());
    settings.agents.push(crate::helpers::careful());
    (TestServer::start_with(settings).await, temp)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_at_an_approval_remembers_it_in_the_chats_conversation() {
    let (server, _temp) = careful_server().await;
    in_terminal(server.addr, &["--agent", "careful"], move |chat| {
        chat.expect("you> ")?;
        chat.send(format!("Help me pick a plan{ENTER}"))?;
        chat.expect("Allow ask_user")?;
        chat.expect("(always: its later calls in this conversation too)")?;
        chat.expect("[y/a/n]")?;
        chat.send("a")?;
        chat.expect("always")?;
        chat.expect("> 1. Basic")?;
        chat.send(ENTER)?;
        chat.expect("Thanks! You answered: Basic.")?;

        // The conversation's next call of ask_user asks its question at once.
        chat.expect("you> ")?;
        chat.send(format!("Help me pick a plan{ENTER}"))?;
        chat.expect("> 1. Basic")?;
        chat.send(DOWN)?;
        chat.send(ENTER)?;
        chat.expect("Thanks! You answered: Pro.")?;
        chat.expect("you> ")?;
        chat.send(CTRL_D)?;
        chat.expect(Eof)?;
        Ok(())
    })
    .await;

    let mut runs = runs(&server).await;
    runs.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    let (first, second) = (
        server.get_run(&runs[0].run_id).await,
        server.get_run(&runs[1].run_id).await,
    );
    let sources = |run: &pb::Run| run.decisions.iter().map(|d| d.source()).collect::<Vec<_>>();
    use pb::DecisionSource::{Grant, Grpc};
    assert_eq!(sources(&first), [Grpc, Grpc], "approved, then answered");
    assert_eq!(
        sources(&second),
        [Grant, Grpc],
        "approved by the grant, then answered"
    );
    let thread = crate::threads::get_thread(&server, &first.thread_id)
        .await
        .expect("GetThread");
    assert_eq!(thread.grants.len(), 1, "{thread:?}");
    assert_eq!(thread.grants[0].tool_name, "ask_user");
    assert_eq!(thread.grants[0].scope(), pb::GrantScope::Thread);
}

#[tokio::test]
async fn always_outside_a_thread_remembers_the_approval_in_the_run() {
    let (server, _temp) = careful_server().await;
    let (stdout, _) = chat(
        &server,
        &[
            "--agent",
            "careful",
            "--answer",
            "always",
            "--answer",
            "Pro",
            "Help me pick a plan",
        ],
    )
    .await;
    assert!(
        stdout.contains("(yes, no, or always: its later calls in this run too)"),
        "{stdout}"
    );
    assert!(stdout.contains("Thanks! You answered: Pro."), "{stdout}");
    let runs = runs(&server).await;
    let run = server.get_run(&runs[0].run_id).await;
    assert_eq!(run.grants.len(), 1, "{run:?}");
    assert_eq!(run.grants[0].scope(), pb::GrantScope::Run);
}

/// Text from the model (here the scripted model echoing a prompt that
/// carries escape sequences: a window title, a screen clear, a clipboard
/// write) is printed without its control sequences.
#[tokio::test]
async fn the_models_text_is_printed_without_terminal_control_sequences() {
    let server = TestServer::start().await;
    let prompt = "plain \u{1b}]0;owned\u{7}title, \u{1b}[2Jcleared, \u{1b}]52;c;ZXZpbA==\u{7}copied\r\u{8}";
    let (stdout, stderr) = chat(&server, &[prompt]).await;
    assert!(stdout.contains("title, cleared, copied"), "{stdout:?}");
    for printed in [&stdout, &stderr] {
        assert!(
            !printed.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
            "a control character was printed: {printed:?}"
        );
    }
}
