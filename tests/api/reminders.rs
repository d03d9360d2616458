//! Reminders and the deadline, through the real binary: a waiting call
//! reminds as its tool's `remind_after` says (a REMINDED run event listing
//! what still waits, in WatchRuns, as a `run.reminded` webhook and in
//! `agentd_reminders_total`), and at the run's deadline its `on_expiry`
//! declines a question or an approval, or approves an approval, and the run
//! goes on (a RESUMED event carrying the DEADLINE decisions). Any call left
//! to expire expires the run. Reminders and deadlines survive a restart and
//! happen once with two replicas sweeping one PostgreSQL store; a request
//! that reads a run past its deadline meets it too. `on_expiry = "approve"`
//! on a tool that never waits for approval stops the start.

use std::path::{Path, PathBuf};

use agentd::pb::{self, DecisionOutcome, DecisionSource, RunEventKind};
use tonic::transport::Channel;

use crate::helpers::{collect, finish_reason, run_id};
use crate::process::{get_run, subscribe, ServerProcess};
use crate::startup::{says, start_failing_with_config};
use crate::watch_runs::{kinds_of, next_events, watch_request};
use crate::webhooks::receiver::Receiver;
use crate::webhooks::{metric, scrape, webhook_table, SECRET_VARIABLE};

type Client = pb::agent_service_client::AgentServiceClient<Channel>;

const NOT_IN_TIME: &str = "The user did not answer in time.";
const REVIEW: &str = r#"call human_review {"draft": "A letter to the customer"}"#;

/// Agents whose waiting calls remind and meet their deadline as their
/// tools say: `support` (a question reminds twice and is declined; a review
/// needs approval, reminds once and is approved, and its own question is
/// then declined), `mixed` (an approval declined beside a question left to
/// expire) and `slow` (one reminder after 1.5 s, then declined; its runs
/// wait 3 s).
const AGENTS: &str = r#"
[[agents]]
id = "support"
tools = [
  { name = "ask_user", remind_after = ["300ms", "1s"], on_expiry = "decline" },
  { name = "human_review", require_approval = true, remind_after = ["300ms"], on_expiry = "approve" },
]

[[agents]]
id = "mixed"
tools = ["ask_user", { name = "human_review", require_approval = true, on_expiry = "decline" }]

[[agents]]
id = "slow"
tools = [{ name = "ask_user", remind_after = ["1500ms"], on_expiry = "decline" }]
"#;

/// The run events of a `support` run that asks a question nobody answers:
/// two reminders, then the deadline declines it and the run goes on.
const QUESTION_LIFE: [RunEventKind; 6] = [
    RunEventKind::Started,
    RunEventKind::Suspended,
    RunEventKind::Reminded,
    RunEventKind::Reminded,
    RunEventKind::Resumed,
    RunEventKind::Completed,
];

/// The run events of a `support` run whose [`REVIEW`] nobody approves nor
/// reviews.
const REVIEW_LIFE: [RunEventKind; 8] = [
    RunEventKind::Started,
    RunEventKind::Suspended,
    RunEventKind::Reminded,
    // Approved: human_review runs, and asks for its review.
    RunEventKind::Resumed,
    RunEventKind::Suspended,
    RunEventKind::Reminded,
    // Nobody reviewed: the review is declined.
    RunEventKind::Resumed,
    RunEventKind::Completed,
];

/// Writes `agentd.toml` in `dir`: [`AGENTS`] and `extra`.
fn config(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("agentd.toml");
    std::fs::write(&path, format!("{AGENTS}\n{extra}")).expect("write agentd.toml");
    path
}

/// A server with the configuration at `config`, sweeping every
/// `sweep` (`0s`: never), with its metrics on an ephemeral port and `args`.
fn server(config: &Path, data: &Path, sweep: &str, args: &[&str]) -> ServerProcess {
    let config = config.to_str().expect("a UTF-8 path");
    let mut all = vec![
        "--config",
        config,
        "--sweep-interval",
        sweep,
        "--metrics-listen",
        "127.0.0.1:0",
    ];
    all.extend_from_slice(args);
    ServerProcess::start_labelled(
        None,
        data,
        &all,
        &[(SECRET_VARIABLE, crate::webhooks::receiver::SECRET)],
    )
}

/// Starts a run of `agent` that waits at most two seconds (a second after
/// the last reminder, so that a sweep slowed by a loaded machine still
/// sends it first); its opening chunks, which suspend.
async fn start(client: &mut Client, agent: &str, prompt: &str) -> Vec<pb::AgentChunk> {
    start_waiting(client, agent, prompt, 2).await
}

/// [`start`], waiting at most `seconds`.
async fn start_waiting(client: &mut Client, agent: &str, prompt: &str, seconds: u64) -> Vec<pb::AgentChunk> {
    let request = pb::StreamAgentRequest {
        agent_id: agent.into(),
        prompt: prompt.into(),
        options: Some(pb::RunOptions {
            suspend_ttl_seconds: seconds,
            ..Default::default()
        }),
        ..Default::default()
    };
    let stream = client
        .stream_agent(request)
        .await
        .expect("StreamAgent")
        .into_inner();
    let chunks = collect(stream).await.expect("the opening");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Suspended, "{chunks:?}");
    chunks
}

async fn watch(client: &mut Client, after: &str, agent: &str) -> tonic::Streaming<pb::RunEvent> {
    client
        .watch_runs(watch_request(after, &[], agent))
        .await
        .expect("WatchRuns")
        .into_inner()
}

/// The events of `run` on `events` up to its first one of kind `last`.
async fn events_until(
    events: &mut tonic::Streaming<pb::RunEvent>,
    run: &str,
    last: RunEventKind,
) -> Vec<pb::RunEvent> {
    let mut seen = Vec::new();
    loop {
        let event = next_events(events, 1).await.remove(0);
        if event.run_id != run {
            continue;
        }
        let done = event.kind() == last;
        seen.push(event);
        if done {
            return seen;
        }
    }
}

fn micros(time: &Option<prost_types::Timestamp>) -> i64 {
    let time = time.as_ref().expect("a time");
    time.seconds * 1_000_000 + i64::from(time.nanos) / 1_000
}

/// The deadline decided `outcome` on `call`.
fn assert_deadline(decision: &pb::Decision, outcome: DecisionOutcome, call: &str) {
    assert_eq!(decision.outcome(), outcome, "{decision:?}");
    assert_eq!(decision.decided_by, "deadline", "{decision:?}");
    assert_eq!(decision.source(), DecisionSource::Deadline, "{decision:?}");
    assert_eq!(decision.tool_call_id, call, "{decision:?}");
}

/// The tool results of the whole run, replayed.
async fn results(client: &mut Client, run: &str) -> Vec<pb::ToolResult> {
    let chunks = collect(subscribe(client, run, 0).await)
        .await
        .expect("the replay");
    crate::helpers::tool_results(&chunks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_reminds_twice_then_the_deadline_declines_it_and_the_run_goes_on() {
    let receiver = Receiver::start([]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let hook = webhook_table(
        "nudges",
        &receiver.url("nudges"),
        "events = [\"run.reminded\", \"run.resumed\"]",
    );
    let config = config(dir.path(), &hook);
    let server = server(&config, &dir.path().join("data"), "50ms", &[]);
    let mut client = server.client().await;
    let mut events = watch(&mut client, "", "support").await;

    let opening = start(&mut client, "support", "Help me pick a plan").await;
    let id = run_id(&opening);
    let seen = events_until(&mut events, &id, RunEventKind::Completed).await;
    assert_eq!(kinds_of(&seen), QUESTION_LIFE);
    let call = seen[1].pending[0].tool_call_id.clone();
    let suspended_at = micros(&seen[1].time);
    for (reminder, after_ms) in seen[2..4].iter().zip([300, 1_000]) {
        assert_eq!(reminder.status(), pb::RunStatus::Suspended);
        assert_eq!(reminder.pending, seen[1].pending, "what still waits");
        assert!(
            micros(&reminder.time) - suspended_at >= after_ms * 1_000,
            "a reminder {after_ms} ms after the suspension: {reminder:?}"
        );
    }
    let resumed = &seen[4];
    assert_eq!(resumed.decisions.len(), 1);
    assert_deadline(&resumed.decisions[0], DecisionOutcome::Declined, &call);

    let run = get_run(&mut client, &id).await;
    assert_eq!(run.status(), pb::RunStatus::Completed);
    assert_eq!(run.decisions, resumed.decisions);
    let results = results(&mut client, &id).await;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].tool_call_id, call);
    assert_eq!(results[0].content, NOT_IN_TIME);
    assert!(!results[0].is_error);
    assert!(run.final_text.contains(NOT_IN_TIME), "{}", run.final_text);

    // The webhook: both reminders, with what waits, then the continuation.
    let received = receiver.wait_for(3, std::time::Duration::from_secs(20)).await;
    let types: Vec<String> = received.iter().map(|r| r.event_type()).collect();
    assert_eq!(types, ["run.reminded", "run.reminded", "run.resumed"]);
    for reminder in &received[..2] {
        let body = reminder.json();
        assert_eq!(body["data"]["kind"], "RUN_EVENT_KIND_REMINDED", "{body}");
        assert_eq!(body["data"]["pending"][0]["toolCallId"], call.as_str(), "{body}");
    }
    let text = scrape(&server).await;
    assert_eq!(
        metric(&text, "agentd_reminders_total{agent=\"support\"}"),
        Some(2.0),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_a_reminder_continues_the_run_as_a_person_decided() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), "");
    let server = server(&config, &dir.path().join("data"), "50ms", &[]);
    let mut client = server.client().await;
    let mut events = watch(&mut client, "", "support").await;

    let opening = start_waiting(&mut client, "support", "Help me pick a plan", 30).await;
    let id = run_id(&opening);
    let reminded = events_until(&mut events, &id, RunEventKind::Reminded).await;
    assert_eq!(reminded.len(), 3, "started, suspended, reminded");
    let stream = client
        .resume(crate::helpers::resume_request(
            &id,
            "",
            pb::resume_request::Answer::Text("Pro".into()),
        ))
        .await
        .expect("Resume after a reminder")
        .into_inner();
    let continued = collect(stream).await.expect("the continuation");
    assert_eq!(finish_reason(&continued), pb::FinishReason::Stop);
    let run = get_run(&mut client, &id).await;
    assert_eq!(run.decisions.len(), 1);
    assert_eq!(run.decisions[0].outcome(), DecisionOutcome::Answered);
    assert_eq!(run.decisions[0].source(), DecisionSource::Grpc);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_approved_at_its_deadline_and_its_own_question_then_declined() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), "");
    let server = server(&config, &dir.path().join("data"), "50ms", &[]);
    let mut client = server.client().await;
    let mut events = watch(&mut client, "", "support").await;

    let opening = start(&mut client, "support", REVIEW).await;
    let id = run_id(&opening);
    let seen = events_until(&mut events, &id, RunEventKind::Completed).await;
    assert_eq!(kinds_of(&seen), REVIEW_LIFE);
    let call = seen[1].pending[0].tool_call_id.clone();
    assert!(seen[1].pending[0].awaiting_approval);
    assert!(!seen[4].pending[0].awaiting_approval, "its own question");
    assert_deadline(&seen[3].decisions[0], DecisionOutcome::Approved, &call);
    assert_deadline(&seen[6].decisions[0], DecisionOutcome::Declined, &call);
    let run = get_run(&mut client, &id).await;
    assert_eq!(run.status(), pb::RunStatus::Completed);
    assert_eq!(run.decisions.len(), 2);
    let results = results(&mut client, &id).await;
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].content, NOT_IN_TIME);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_left_to_expire_expires_the_run_and_the_declined_approval_with_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), "");
    let server = server(&config, &dir.path().join("data"), "50ms", &[]);
    let mut client = server.client().await;
    let mut events = watch(&mut client, "", "mixed").await;

    let prompt = format!(r#"{REVIEW}; call ask_user {{"question": "Why?"}}"#);
    let opening = start(&mut client, "mixed", &prompt).await;
    let id = run_id(&opening);
    let seen = events_until(&mut events, &id, RunEventKind::Expired).await;
    assert_eq!(
        kinds_of(&seen),
        [
            RunEventKind::Started,
            RunEventKind::Suspended,
            RunEventKind::Expired
        ]
    );
    let expired = &seen[2];
    assert_eq!(expired.decisions.len(), 2);
    for (decision, pending) in expired.decisions.iter().zip(&seen[1].pending) {
        assert_deadline(decision, DecisionOutcome::Expired, &pending.tool_call_id);
    }
    assert_eq!(get_run(&mut client, &id).await.status(), pb::RunStatus::Expired);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_reading_a_run_past_its_deadline_meets_it_without_a_sweep() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), "");
    let server = server(&config, &dir.path().join("data"), "0s", &[]);
    let mut client = server.client().await;
    let mut events = watch(&mut client, "", "support").await;

    let opening = start(&mut client, "support", "Help me pick a plan").await;
    let id = run_id(&opening);
    // No sweep, so no reminder. Once the deadline has passed, GetRun
    // declines the question and continues the run.
    let expires_at = crate::helpers::suspensions(&opening)[0].expires_at;
    let wait =
        micros(&expires_at) - micros(&Some(prost_types::Timestamp::from(std::time::SystemTime::now())));
    tokio::time::sleep(std::time::Duration::from_micros(wait.max(0) as u64 + 10_000)).await;
    let run = get_run(&mut client, &id).await;
    assert_ne!(run.status(), pb::RunStatus::Suspended, "{run:?}");
    assert_deadline(
        &run.decisions[0],
        DecisionOutcome::Declined,
        &opening_call(&opening),
    );
    let seen = events_until(&mut events, &id, RunEventKind::Completed).await;
    assert_eq!(
        kinds_of(&seen),
        [
            RunEventKind::Started,
            RunEventKind::Suspended,
            RunEventKind::Resumed,
            RunEventKind::Completed,
        ]
    );
}

fn opening_call(opening: &[pb::AgentChunk]) -> String {
    crate::helpers::suspensions(opening)[0].tool_call_id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_and_a_deadline_due_while_the_server_was_down_happen_once_after_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), "");
    let data = dir.path().join("data");
    let mut first = server(&config, &data, "50ms", &[]);
    let mut client = first.client().await;
    let mut events = watch(&mut client, "", "slow").await;
    let opening = start_waiting(&mut client, "slow", "Help me pick a plan", 3).await;
    let id = run_id(&opening);
    let suspended = events_until(&mut events, &id, RunEventKind::Suspended).await;
    // Killed well before its reminder (1.5 s after it suspended).
    drop((events, client));
    first.kill_hard();

    let second = server(&config, &data, "50ms", &[]);
    let mut client = second.client().await;
    let cursor = &suspended.last().expect("the suspension").cursor;
    let mut events = watch(&mut client, cursor, "slow").await;
    let seen = events_until(&mut events, &id, RunEventKind::Completed).await;
    assert_eq!(
        kinds_of(&seen),
        [
            RunEventKind::Reminded,
            RunEventKind::Resumed,
            RunEventKind::Completed,
        ]
    );
    assert_deadline(
        &seen[1].decisions[0],
        DecisionOutcome::Declined,
        &opening_call(&opening),
    );
    let text = scrape(&second).await;
    assert_eq!(
        metric(&text, "agentd_reminders_total{agent=\"slow\"}"),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn two_replicas_on_postgres_remind_and_decide_each_run_once() {
    let schema = crate::pg::TestSchema::create().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config = config(dir.path(), "");
    let url = schema.url();
    let replica = |name: &str| {
        server(
            &config,
            &dir.path().join(name),
            "50ms",
            &["--store", &url, "--replica-id", name],
        )
    };
    let (a, b) = (replica("replica-a"), replica("replica-b"));
    let (mut on_a, mut on_b) = (a.client().await, b.client().await);
    let mut events = watch(&mut on_b, "", "").await;

    // Runs started on both replicas; both sweep every 50 ms.
    let mut runs = Vec::new();
    for (on, prompt) in [
        ("a", "Help me pick a plan"),
        ("b", "Help me pick a plan"),
        ("a", REVIEW),
        ("b", REVIEW),
    ] {
        let client = if on == "a" { &mut on_a } else { &mut on_b };
        runs.push((run_id(&start(client, "support", prompt).await), prompt));
    }
    let mut seen: std::collections::HashMap<String, Vec<RunEventKind>> = Default::default();
    let mut done = 0;
    while done < runs.len() {
        let event = next_events(&mut events, 1).await.remove(0);
        if event.kind() == RunEventKind::Completed {
            done += 1;
        }
        seen.entry(event.run_id.clone()).or_default().push(event.kind());
    }
    for (id, prompt) in &runs {
        let expected: &[RunEventKind] = if *prompt == REVIEW {
            &REVIEW_LIFE
        } else {
            &QUESTION_LIFE
        };
        assert_eq!(seen[id], expected, "run {id}: each reminder and deadline once");
        let run = get_run(&mut on_a, id).await;
        assert_eq!(run.status(), pb::RunStatus::Completed);
        assert!(run
            .decisions
            .iter()
            .all(|d| d.source() == DecisionSource::Deadline));
    }
    // Between them, the replicas sent each reminder once.
    let mut sent = 0.0;
    for replica in [&a, &b] {
        let text = scrape(replica).await;
        sent += metric(&text, "agentd_reminders_total{agent=\"support\"}").unwrap_or(0.0);
    }
    assert_eq!(sent, 8.0, "two reminders in each of the four runs");
}

#[tokio::test]
async fn approve_on_a_tool_that_never_waits_for_approval_stops_the_start() {
    let stderr = start_failing_with_config(
        "[[agents]]\nid = \"support\"\ntools = [{ name = \"ask_user\", on_expiry = \"approve\" }]\n",
    )
    .await;
    says(
        &stderr,
        "agent support: tool ask_user: on_expiry = \"approve\" is for calls that wait for approval",
    );
}

/// A store whose next `armed` commits each let a reminder of the run in
/// `run` land just before them: a write that stores no chunk and leaves
/// the run waiting, as the sweep's reminder does.
struct RemindFirst {
    inner: std::sync::Arc<dyn agentd::store::Store>,
    run: std::sync::Mutex<Option<agentd::domain::RunId>>,
    armed: std::sync::atomic::AtomicUsize,
}

impl agentd::store::StoreHook for RemindFirst {
    async fn around<T: Send>(
        &self,
        operation: agentd::store::Operation,
        work: impl std::future::Future<Output = Result<T, agentd::store::StoreError>> + Send,
    ) -> Result<T, agentd::store::StoreError> {
        use std::sync::atomic::Ordering;
        let run = *self.run.lock().unwrap();
        if let (Some(id), "commit") = (run, operation.name) {
            let armed = self
                .armed
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            if armed.is_ok() {
                let mut run = self.inner.load_run(id).await?;
                let staged = run.stage([]);
                self.inner
                    .commit(
                        &run,
                        staged.expected_version,
                        &staged.events,
                        &[agentd::domain::RunEventKind::Reminded],
                    )
                    .await?;
            }
        }
        work.await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_that_reminders_overtake_claims_the_run_again() {
    use std::sync::Arc;

    use agentd::agent::{AgentRegistry, AgentSpec};
    use agentd::runtime::{Runtime, RuntimeConfig};
    use agentd::store::{Layered, SqliteStore, Store};

    let temp = tempfile::tempdir().expect("temp dir");
    let sqlite: Arc<dyn Store> =
        Arc::new(SqliteStore::open(temp.path().join("agentd.sqlite3")).expect("store"));
    let hook = RemindFirst {
        inner: Arc::clone(&sqlite),
        run: Default::default(),
        armed: Default::default(),
    };
    let store = Arc::new(Layered::new(sqlite, hook));
    let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
    let runtime = Runtime::new(
        agents,
        Arc::clone(&store) as Arc<dyn Store>,
        RuntimeConfig::default(),
    );
    let server = crate::helpers::TestServer::serve(runtime).await;

    let opening = server.stream("Help me pick a plan").await;
    let id = run_id(&opening);
    // A reminder lands before the claim from the run this process kept,
    // and another before the claim from the run read from the store.
    *store.hook().run.lock().unwrap() = Some(id.parse().expect("a run id"));
    store.hook().armed.store(2, std::sync::atomic::Ordering::SeqCst);
    let continued = server
        .resume_text(&id, "Pro")
        .await
        .expect("the Resume goes through");
    assert_eq!(finish_reason(&continued), pb::FinishReason::Stop);
    assert_eq!(store.hook().armed.load(std::sync::atomic::Ordering::SeqCst), 0);
    let run = server.get_run(&id).await;
    assert_eq!(run.status(), pb::RunStatus::Completed);
}
