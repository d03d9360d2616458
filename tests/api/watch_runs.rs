//! WatchRuns over real connections: a tenant's run events replayed after a
//! cursor, then followed live across suspensions and Resumes, with no gap
//! and no duplicate at the seam even while many runs change at once;
//! filters by kind and agent; cursors checked; tenants kept apart. (Across
//! replicas: `replicas/watch.rs`.)

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use agentd::pb::agent_service_client::AgentServiceClient;
use agentd::pb::{self, RunEventKind};
use tokio_stream::StreamExt;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_types::StatusExt;

use crate::configured::{agent, server_with};
use crate::helpers::{expect_code, finish_reason, run_id, settings_in, TestServer};
use crate::security::auth::{two_tenants, ACME_KEY, GLOBEX_KEY};

/// How long a test waits for an event that must come.
const PATIENCE: Duration = Duration::from_secs(10);

pub(crate) fn watch_request(after: &str, kinds: &[RunEventKind], agent_id: &str) -> pb::WatchRunsRequest {
    pb::WatchRunsRequest {
        after_cursor: after.into(),
        kinds: kinds.iter().map(|kind| *kind as i32).collect(),
        agent_id: agent_id.into(),
    }
}

async fn watch(
    client: &mut AgentServiceClient<Channel>,
    request: pb::WatchRunsRequest,
) -> Result<tonic::Streaming<pb::RunEvent>, Status> {
    client
        .watch_runs(request)
        .await
        .map(|response| response.into_inner())
}

/// The next `n` events of `stream`, each within [`PATIENCE`].
pub(crate) async fn next_events(stream: &mut tonic::Streaming<pb::RunEvent>, n: usize) -> Vec<pb::RunEvent> {
    let mut events = Vec::with_capacity(n);
    while events.len() < n {
        let event = tokio::time::timeout(PATIENCE, stream.next())
            .await
            .unwrap_or_else(|_| panic!("event {} of {n} came in time (got {events:?})", events.len() + 1))
            .expect("the watch goes on")
            .expect("an event");
        events.push(event);
    }
    events
}

pub(crate) fn kinds_of(events: &[pb::RunEvent]) -> Vec<RunEventKind> {
    events.iter().map(|event| event.kind()).collect()
}

const LIFE: [RunEventKind; 4] = [
    RunEventKind::Started,
    RunEventKind::Suspended,
    RunEventKind::Resumed,
    RunEventKind::Completed,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replays_after_a_cursor_then_follows_live_across_a_resume() {
    let server = TestServer::start().await;
    let mut client = server.client();
    let mut live = watch(&mut client, watch_request("", &[], ""))
        .await
        .expect("WatchRuns");

    let opening = server.stream("Help me pick a plan").await;
    assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
    let id = run_id(&opening);
    let first = next_events(&mut live, 2).await;
    assert_eq!(kinds_of(&first), [RunEventKind::Started, RunEventKind::Suspended]);
    assert!(first
        .iter()
        .all(|event| event.run_id == id && event.agent_id == "assistant"));
    assert_eq!(first[0].status(), pb::RunStatus::Running);
    // The suspension carries the question, as GetRun has it.
    let suspended = &first[1];
    assert_eq!(suspended.status(), pb::RunStatus::Suspended);
    assert_eq!(suspended.pending, server.get_run(&id).await.pending);
    let question = suspended.pending[0]
        .suspend_payload
        .as_ref()
        .and_then(|payload| payload.kind.as_ref());
    assert!(
        matches!(question, Some(pb::suspend_payload::Kind::AskUser(ask)) if !ask.question.is_empty()),
        "{suspended:?}"
    );
    assert_ne!(first[0].cursor, first[1].cursor);

    server.resume_text(&id, "Pro").await.expect("Resume");
    let rest = next_events(&mut live, 2).await;
    assert_eq!(kinds_of(&rest), [RunEventKind::Resumed, RunEventKind::Completed]);
    assert_eq!(rest[1].status(), pb::RunStatus::Completed);
    assert!(rest[1].pending.is_empty());
    let seen: Vec<pb::RunEvent> = first.into_iter().chain(rest).collect();
    assert!(
        seen.windows(2).all(|pair| {
            let at = |event: &pb::RunEvent| event.time.map(|t| (t.seconds, t.nanos));
            at(&pair[0]) <= at(&pair[1])
        }),
        "{seen:?}"
    );

    // From the first event's cursor: the other three, exactly as seen
    // live, then what happens next.
    let mut replay = watch(&mut client, watch_request(&seen[0].cursor, &[], ""))
        .await
        .expect("WatchRuns after a cursor");
    assert_eq!(next_events(&mut replay, 3).await, seen[1..]);
    let second = run_id(&server.stream("Help me pick a plan").await);
    for stream in [&mut live, &mut replay] {
        let next = next_events(stream, 2).await;
        assert_eq!(kinds_of(&next), [RunEventKind::Started, RunEventKind::Suspended]);
        assert!(next.iter().all(|event| event.run_id == second));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_gap_and_no_duplicate_at_the_seam_under_concurrent_runs() {
    const RUNS: usize = 16;
    let server = TestServer::start().await;
    let mut client = server.client();
    let mut everything = watch(&mut client, watch_request("", &[], ""))
        .await
        .expect("WatchRuns");

    let server = std::sync::Arc::new(server);
    let runs: Vec<_> = (0..RUNS)
        .map(|_| {
            let server = server.clone();
            tokio::spawn(async move {
                let id = run_id(&server.stream("Help me pick a plan").await);
                server.resume_text(&id, "Basic").await.expect("Resume");
                id
            })
        })
        .collect();

    // Joins while the runs go on, from a cursor early in the feed.
    let mut seen = next_events(&mut everything, 5).await;
    let mut joined = watch(&mut client, watch_request(&seen[2].cursor, &[], ""))
        .await
        .expect("WatchRuns after a cursor");
    seen.extend(next_events(&mut everything, RUNS * LIFE.len() - 5).await);
    let mut ids = HashSet::new();
    for run in runs {
        ids.insert(run.await.expect("a run"));
    }

    let cursors: HashSet<&str> = seen.iter().map(|event| event.cursor.as_str()).collect();
    assert_eq!(cursors.len(), seen.len(), "every event once");
    let mut lives: HashMap<&str, Vec<RunEventKind>> = HashMap::new();
    for event in &seen {
        lives.entry(&event.run_id).or_default().push(event.kind());
    }
    assert_eq!(lives.keys().map(|id| id.to_string()).collect::<HashSet<_>>(), ids);
    for (id, life) in lives {
        assert_eq!(life, LIFE, "run {id}, in the order it happened");
    }
    assert_eq!(
        next_events(&mut joined, seen.len() - 3).await,
        seen[3..],
        "the watcher that joined at a cursor saw exactly what came after it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn watchers_filter_by_kind_and_agent() {
    let server = server_with(vec![
        agent("first", vec!["ask_user".into()]),
        agent("second", vec!["ask_user".into()]),
    ])
    .await;
    let mut client = server.client();
    let mut suspensions = watch(&mut client, watch_request("", &[RunEventKind::Suspended], ""))
        .await
        .expect("WatchRuns by kind");
    let mut second = watch(&mut client, watch_request("", &[], "second"))
        .await
        .expect("by agent");
    let mut both = watch(
        &mut client,
        watch_request("", &[RunEventKind::Started, RunEventKind::Completed], "second"),
    )
    .await
    .expect("by kind and agent");

    let on_first = run_id(&server.run("first", "Help me pick a plan").await);
    server.resume_text(&on_first, "Pro").await.expect("Resume");
    let on_second = run_id(&server.run("second", "Help me pick a plan").await);
    server.resume_text(&on_second, "Pro").await.expect("Resume");

    let seen = next_events(&mut suspensions, 2).await;
    assert_eq!(kinds_of(&seen), [RunEventKind::Suspended; 2]);
    assert_eq!([&seen[0].run_id, &seen[1].run_id], [&on_first, &on_second]);
    let seen = next_events(&mut second, 4).await;
    assert_eq!(kinds_of(&seen), LIFE);
    assert!(seen
        .iter()
        .all(|event| event.run_id == on_second && event.agent_id == "second"));
    let seen = next_events(&mut both, 2).await;
    assert_eq!(kinds_of(&seen), [RunEventKind::Started, RunEventKind::Completed]);
    assert!(seen.iter().all(|event| event.run_id == on_second));
}

fn reason(status: &Status) -> String {
    status
        .get_details_error_info()
        .map(|info| info.reason)
        .unwrap_or_default()
}

#[tokio::test]
async fn cursors_no_server_made_are_refused() {
    let server = TestServer::start().await;
    let mut client = server.client();
    for bad in ["garbage", "e1.0.1", "e1.0.01.0", "e2.0.1.0"] {
        let status = expect_code(
            watch(&mut client, watch_request(bad, &[], "")).await,
            Code::InvalidArgument,
        );
        assert_eq!(reason(&status), "INVALID_CURSOR", "{bad}: {status:?}");
        assert!(
            status.message().contains("malformed cursor"),
            "{}",
            status.message()
        );
    }
    // Well formed, but after every event the store has given.
    let status = expect_code(
        watch(&mut client, watch_request("e1.0.ffffff.0", &[], "")).await,
        Code::InvalidArgument,
    );
    assert_eq!(reason(&status), "INVALID_CURSOR");
    assert!(
        status.message().contains("after every event"),
        "{}",
        status.message()
    );
    let status = expect_code(
        watch(
            &mut client,
            pb::WatchRunsRequest {
                kinds: vec![42],
                ..Default::default()
            },
        )
        .await,
        Code::InvalidArgument,
    );
    assert!(status.message().contains("kinds"), "{}", status.message());

    // A cursor of a real event stays good.
    let id = run_id(&server.stream("Help me pick a plan").await);
    let mut replay = watch(&mut client, watch_request("e1.0.0.0", &[], ""))
        .await
        .expect("from the start");
    let first = next_events(&mut replay, 2).await;
    assert_eq!(first[0].run_id, id);
    watch(&mut client, watch_request(&first[1].cursor, &[], ""))
        .await
        .expect("the cursor of the newest event");
}

#[tokio::test]
async fn a_cursor_older_than_retention_is_out_of_range() {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    settings.thread_retention = Some(Duration::from_secs(3600));
    let server = TestServer::start_with(settings).await;
    let mut client = server.client();
    let mut live = watch(&mut client, watch_request("", &[], ""))
        .await
        .expect("WatchRuns");
    let id = run_id(&server.stream("Help me pick a plan").await);
    let recent = next_events(&mut live, 1).await;
    assert_eq!(recent[0].run_id, id);
    watch(&mut client, watch_request(&recent[0].cursor, &[], ""))
        .await
        .expect("a recent cursor");

    // Position 1, written two hours ago.
    let two_hours_ago = agentd::domain::Timestamp::now().before(Duration::from_secs(7200));
    let old = format!("e1.0.1.{:x}", two_hours_ago.0);
    let status = expect_code(
        watch(&mut client, watch_request(&old, &[], "")).await,
        Code::OutOfRange,
    );
    assert_eq!(reason(&status), "CURSOR_EXPIRED");
    assert!(status.message().contains("ListRuns"), "{}", status.message());
}

#[tokio::test]
async fn a_tenant_sees_only_its_own_events() {
    let server = two_tenants().await;
    let mut acme = server.client(Some(ACME_KEY)).await;
    let mut globex = server.client(Some(GLOBEX_KEY)).await;
    let mut acme_events = acme
        .watch_runs(watch_request("", &[], ""))
        .await
        .expect("WatchRuns as acme")
        .into_inner();
    let mut globex_events = globex
        .watch_runs(watch_request("", &[], ""))
        .await
        .expect("WatchRuns as globex")
        .into_inner();

    let of = |chunks: Result<Vec<pb::AgentChunk>, Status>| run_id(&chunks.expect("StreamAgent"));
    let globex_run = of(crate::security::server::start(
        &mut globex,
        crate::security::server::prompt("Help me pick a plan"),
    )
    .await);
    let acme_run = of(crate::security::server::start(
        &mut acme,
        crate::security::server::prompt("Help me pick a plan"),
    )
    .await);
    let seen = next_events(&mut acme_events, 2).await;
    assert!(seen.iter().all(|event| event.run_id == acme_run), "{seen:?}");
    let seen = next_events(&mut globex_events, 2).await;
    assert!(seen.iter().all(|event| event.run_id == globex_run), "{seen:?}");

    // Nor without a key.
    let mut anonymous = server.client(None).await;
    let refused = anonymous.watch_runs(watch_request("", &[], "")).await;
    assert_eq!(refused.unwrap_err().code(), Code::Unauthenticated);
}
