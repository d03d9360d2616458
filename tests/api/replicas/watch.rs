//! WatchRuns across replicas (PostgreSQL, two real server processes): a
//! watcher on one replica sees, live, the events of runs started and
//! resumed on the other, in order; one that joins later at a cursor replays
//! the rest on either replica and sees exactly what the first saw; runs
//! changing on both replicas at once reach both watchers once each.

use std::collections::{HashMap, HashSet};

use agentd::pb::{self, RunEventKind};

use super::process::{stream_prompt, Pair};
use crate::helpers::{collect, finish_reason, resume_request, run_id};
use crate::watch_runs::{kinds_of, next_events, watch_request};

const LIFE: [RunEventKind; 4] = [
    RunEventKind::Started,
    RunEventKind::Suspended,
    RunEventKind::Resumed,
    RunEventKind::Completed,
];

async fn resume(
    client: &mut pb::agent_service_client::AgentServiceClient<tonic::transport::Channel>,
    id: &str,
) {
    let answer = pb::resume_request::Answer::Text("Pro".into());
    let stream = client
        .resume(resume_request(id, "", answer))
        .await
        .expect("Resume")
        .into_inner();
    let chunks = collect(stream).await.expect("the continuation");
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_watcher_on_one_replica_sees_the_runs_of_the_other() {
    let pair = Pair::start().await;
    let (mut a, mut b) = (pair.a.client().await, pair.b.client().await);
    let mut on_b = b
        .watch_runs(watch_request("", &[], ""))
        .await
        .expect("WatchRuns on B")
        .into_inner();

    // Started and suspended on A, resumed on A: B sees each change.
    let opening = stream_prompt(&mut a, "Help me pick a plan").await;
    let id = run_id(&opening);
    let first = next_events(&mut on_b, 2).await;
    assert_eq!(kinds_of(&first), [RunEventKind::Started, RunEventKind::Suspended]);
    assert!(first.iter().all(|event| event.run_id == id));
    assert!(!first[1].pending.is_empty(), "the question travels along");
    resume(&mut a, &id).await;
    let rest = next_events(&mut on_b, 2).await;
    assert_eq!(kinds_of(&rest), [RunEventKind::Resumed, RunEventKind::Completed]);
    let seen: Vec<pb::RunEvent> = first.into_iter().chain(rest).collect();

    // Joining at the first event's cursor, on either replica: the rest.
    for client in [&mut a, &mut b] {
        let mut joined = client
            .watch_runs(watch_request(&seen[0].cursor, &[], ""))
            .await
            .expect("WatchRuns after a cursor")
            .into_inner();
        assert_eq!(next_events(&mut joined, 3).await, seen[1..]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn runs_on_both_replicas_reach_both_watchers_once_each() {
    const RUNS_EACH: usize = 6;
    let pair = Pair::start().await;
    let (mut a, mut b) = (pair.a.client().await, pair.b.client().await);
    let mut watchers = Vec::new();
    for client in [&mut a, &mut b] {
        let stream = client
            .watch_runs(watch_request("", &[], ""))
            .await
            .expect("WatchRuns")
            .into_inner();
        watchers.push(stream);
    }
    let mut runs = Vec::new();
    for client in [a.clone(), b.clone()] {
        for _ in 0..RUNS_EACH {
            let mut client = client.clone();
            runs.push(tokio::spawn(async move {
                let id = run_id(&stream_prompt(&mut client, "Help me pick a plan").await);
                resume(&mut client, &id).await;
                id
            }));
        }
    }
    let mut ids = HashSet::new();
    for run in runs {
        ids.insert(run.await.expect("a run"));
    }
    let mut feeds = Vec::new();
    for watcher in &mut watchers {
        let seen = next_events(watcher, 2 * RUNS_EACH * LIFE.len()).await;
        let cursors: HashSet<&str> = seen.iter().map(|event| event.cursor.as_str()).collect();
        assert_eq!(cursors.len(), seen.len(), "every event once");
        let mut lives: HashMap<String, Vec<RunEventKind>> = HashMap::new();
        for event in &seen {
            lives.entry(event.run_id.clone()).or_default().push(event.kind());
        }
        assert_eq!(lives.keys().cloned().collect::<HashSet<_>>(), ids);
        assert!(lives.values().all(|life| *life == LIFE), "{lives:?}");
        feeds.push(seen);
    }
    assert_eq!(feeds[0], feeds[1], "both replicas give the events in one order");
}
