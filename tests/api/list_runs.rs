//! ListRuns over gRPC: filters, newest first, keyset pages that hold still
//! while runs are started between page reads, page size defaults, and
//! precise errors for malformed page tokens and statuses.

use agentd::agent::AgentSpec;
use agentd::pb::{self, RunStatus};
use tonic::{Code, Status};
use tonic_types::StatusExt;

use crate::helpers::*;

/// A server hosting `assistant` (the default) and `helper`.
async fn two_agent_server() -> (TestServer, tempfile::TempDir) {
    let temp = tempfile::tempdir().expect("temp dir");
    let mut settings = settings_in(temp.path());
    settings.agents = vec![
        AgentSpec::assistant(),
        AgentSpec {
            id: "helper".into(),
            default: false,
            ..AgentSpec::assistant()
        },
    ];
    (TestServer::start_with(settings).await, temp)
}

fn request(status: RunStatus, agent_id: &str, page_size: u32, page_token: &str) -> pb::ListRunsRequest {
    pb::ListRunsRequest {
        status: status as i32,
        agent_id: agent_id.into(),
        page_size,
        page_token: page_token.into(),
    }
}

async fn list(server: &TestServer, request: pb::ListRunsRequest) -> Result<pb::ListRunsResponse, Status> {
    Ok(server.client().list_runs(request).await?.into_inner())
}

/// The run ids of one whole listing (a single page).
async fn ids(server: &TestServer, status: RunStatus, agent_id: &str) -> Vec<String> {
    let page = list(server, request(status, agent_id, 0, ""))
        .await
        .expect("ListRuns");
    assert_eq!(page.next_page_token, "", "everything fits on one page");
    page.runs.into_iter().map(|run| run.run_id).collect()
}

/// Starts a run of `agent_id` and reads it to its finish; returns its id.
async fn run(server: &TestServer, agent_id: &str, prompt: &str) -> String {
    let chunks = server
        .start_run(pb::StreamAgentRequest {
            agent_id: agent_id.into(),
            prompt: prompt.into(),
            ..Default::default()
        })
        .await
        .expect("StreamAgent");
    run_id(&chunks)
}

fn newest_first(ids: &[&String]) -> Vec<String> {
    ids.iter().rev().map(|id| id.to_string()).collect()
}

#[tokio::test]
async fn runs_are_filtered_by_status_and_agent_newest_first() {
    let (server, _temp) = two_agent_server().await;
    let done_1 = run(&server, "assistant", "plain hello").await;
    let asked_1 = run(&server, "assistant", "pick a plan").await;
    let helper_asked = run(&server, "helper", "pick a plan").await;
    let done_2 = run(&server, "", "plain again").await;
    let helper_done = run(&server, "helper", "plain thanks").await;

    let all = [&done_1, &asked_1, &helper_asked, &done_2, &helper_done];
    assert_eq!(ids(&server, RunStatus::Unspecified, "").await, newest_first(&all));
    assert_eq!(
        ids(&server, RunStatus::Suspended, "").await,
        newest_first(&[&asked_1, &helper_asked])
    );
    assert_eq!(
        ids(&server, RunStatus::Unspecified, "helper").await,
        newest_first(&[&helper_asked, &helper_done])
    );
    assert_eq!(
        ids(&server, RunStatus::Completed, "assistant").await,
        newest_first(&[&done_1, &done_2])
    );
    assert!(ids(&server, RunStatus::Expired, "").await.is_empty());
    assert!(ids(&server, RunStatus::Unspecified, "nobody").await.is_empty());

    // Listed runs are whole runs: the same as GetRun returns, without the
    // conversation (GetRun's only).
    let page = list(&server, request(RunStatus::Suspended, "helper", 0, ""))
        .await
        .expect("ListRuns");
    let read = server.get_run(&helper_asked).await;
    assert!(!read.messages.is_empty(), "GetRun returns the conversation");
    assert_eq!(
        page.runs,
        vec![pb::Run {
            messages: Vec::new(),
            ..read
        }]
    );
    assert_eq!(
        page.runs[0].pending.len(),
        1,
        "a suspended run shows its pending call"
    );
}

#[tokio::test]
async fn pages_hold_still_while_runs_are_started_between_them() {
    let server = TestServer::start().await;
    let mut older = Vec::new();
    for i in 0..5 {
        older.push(run(&server, "", &format!("plain run {i}")).await);
    }

    let mut seen = Vec::new();
    let mut token = String::new();
    let mut newer = Vec::new();
    let mut pages = 0;
    loop {
        let page = list(&server, request(RunStatus::Unspecified, "", 2, &token))
            .await
            .expect("ListRuns");
        pages += 1;
        assert!(page.runs.len() <= 2, "page_size is respected");
        seen.extend(page.runs.into_iter().map(|run| run.run_id));
        // A run started between page reads is newer than every page after
        // the first: it must not shift, repeat or hide the older runs.
        newer.push(run(&server, "", "plain, started between pages").await);
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(pages, 3, "5 runs in pages of 2");
    assert_eq!(seen, newest_first(&older.iter().collect::<Vec<_>>()));

    // A fresh first page starts with the runs started meanwhile.
    let first = list(&server, request(RunStatus::Unspecified, "", 3, ""))
        .await
        .expect("ListRuns");
    let first: Vec<String> = first.runs.into_iter().map(|run| run.run_id).collect();
    assert_eq!(first, newest_first(&newer.iter().collect::<Vec<_>>()));
}

#[tokio::test]
async fn a_full_last_page_has_no_next_page_token() {
    let server = TestServer::start().await;
    let mut runs = Vec::new();
    for i in 0..4 {
        runs.push(run(&server, "", &format!("plain run {i}")).await);
    }
    let first = list(&server, request(RunStatus::Unspecified, "", 2, ""))
        .await
        .expect("first page");
    assert_eq!(first.runs.len(), 2);
    assert_ne!(first.next_page_token, "");
    let last = list(
        &server,
        request(RunStatus::Unspecified, "", 2, &first.next_page_token),
    )
    .await
    .expect("last page");
    assert_eq!(last.runs.len(), 2);
    assert_eq!(last.next_page_token, "", "no page follows the last runs");
    let whole = list(&server, request(RunStatus::Unspecified, "", 4, ""))
        .await
        .expect("one page");
    assert_eq!(whole.runs.len(), 4);
    assert_eq!(whole.next_page_token, "");
}

#[tokio::test]
async fn page_size_zero_means_fifty_and_large_sizes_are_clamped() {
    let server = TestServer::start().await;
    // Started concurrently: group commit keeps 51 runs quick.
    let mut starts = tokio::task::JoinSet::new();
    for i in 0..51 {
        let mut client = server.client();
        starts.spawn(async move {
            let request = pb::StreamAgentRequest {
                prompt: format!("plain run {i}"),
                ..Default::default()
            };
            collect(client.stream_agent(request).await?.into_inner()).await
        });
    }
    while let Some(started) = starts.join_next().await {
        started.expect("start task").expect("StreamAgent");
    }

    let default = list(&server, request(RunStatus::Unspecified, "", 0, ""))
        .await
        .expect("ListRuns");
    assert_eq!(default.runs.len(), 50);
    let rest = list(
        &server,
        request(RunStatus::Unspecified, "", 0, &default.next_page_token),
    )
    .await
    .expect("second page");
    assert_eq!(rest.runs.len(), 1);
    assert_eq!(rest.next_page_token, "");

    // Larger than the maximum (500) is served as the maximum, not refused.
    let large = list(&server, request(RunStatus::Unspecified, "", u32::MAX, ""))
        .await
        .expect("a huge page_size is clamped");
    assert_eq!(large.runs.len(), 51);
    assert_eq!(large.next_page_token, "");
}

#[tokio::test]
async fn malformed_page_tokens_and_statuses_are_invalid_argument() {
    let server = TestServer::start().await;
    let id = run(&server, "", "plain").await;
    for token in [
        "garbage".to_owned(),
        id.clone(),
        format!("r2.{id}"),
        "r1.not-a-run-id".to_owned(),
    ] {
        let status = expect_code(
            list(&server, request(RunStatus::Unspecified, "", 0, &token)).await,
            Code::InvalidArgument,
        );
        assert!(status.message().contains("page_token"), "{status:?}");
        let bad_request = status.get_details_bad_request().expect("BadRequest details");
        assert_eq!(bad_request.field_violations[0].field, "page_token");
    }

    let unknown_status = pb::ListRunsRequest {
        status: 99,
        ..Default::default()
    };
    let status = expect_code(list(&server, unknown_status).await, Code::InvalidArgument);
    assert_eq!(
        status
            .get_details_bad_request()
            .expect("BadRequest")
            .field_violations[0]
            .field,
        "status"
    );
}
