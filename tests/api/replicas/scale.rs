//! Many suspended runs across two replicas (PostgreSQL): 1,000 runs
//! suspended through alternating replicas, each resumed through the other
//! one, concurrently. None is lost, none answered twice, and both replicas
//! list them all.

use std::sync::Arc;

use agentd::pb;
use tokio::sync::Semaphore;

use super::process::{stream_prompt, Pair};
use crate::helpers::{collect, finish, finish_reason, resume_request, run_id};

const RUNS: usize = 1000;
/// Requests in flight at once, across both replicas.
const CONCURRENCY: usize = 64;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL: set AGENTD_TEST_POSTGRES_URL; .ci/run runs it"]
async fn a_thousand_suspended_runs_resumed_through_alternating_replicas_lose_none() {
    let pair = Pair::start().await;
    let clients = [pair.a.client().await, pair.b.client().await];
    let permits = Arc::new(Semaphore::new(CONCURRENCY));

    let tasks: Vec<_> = (0..RUNS)
        .map(|i| {
            let mut suspend_on = clients[i % 2].clone();
            let mut resume_on = clients[(i + 1) % 2].clone();
            let permits = Arc::clone(&permits);
            tokio::spawn(async move {
                let _permit = permits.acquire_owned().await.expect("semaphore");
                let opening = stream_prompt(&mut suspend_on, "Help me pick a plan").await;
                assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
                let id = run_id(&opening);
                let answer = pb::resume_request::Answer::Text(["Basic", "Pro", "Enterprise"][i % 3].into());
                let stream = resume_on
                    .resume(resume_request(&id, "", answer))
                    .await
                    .unwrap_or_else(|status| panic!("Resume of run {i}: {status:?}"))
                    .into_inner();
                let resumed = collect(stream).await.expect("Resume stream");
                assert_eq!(finish_reason(&resumed), pb::FinishReason::Stop);
                assert!(finish(&resumed)
                    .text
                    .contains(["Basic", "Pro", "Enterprise"][i % 3]));
                id
            })
        })
        .collect();
    let mut ids = Vec::with_capacity(RUNS);
    for task in tasks {
        ids.push(task.await.expect("run task"));
    }

    // Every run is completed, as both replicas list it.
    for client in &clients {
        let mut client = client.clone();
        let mut listed = Vec::new();
        let mut page_token = String::new();
        loop {
            let page = client
                .list_runs(pb::ListRunsRequest {
                    status: pb::RunStatus::Completed as i32,
                    page_size: 500,
                    page_token: page_token.clone(),
                    ..Default::default()
                })
                .await
                .expect("ListRuns")
                .into_inner();
            listed.extend(page.runs.into_iter().map(|run| run.run_id));
            if page.next_page_token.is_empty() {
                break;
            }
            page_token = page.next_page_token;
        }
        listed.sort();
        let mut expected = ids.clone();
        expected.sort();
        assert_eq!(listed, expected, "every run completed, none lost");
    }
}
