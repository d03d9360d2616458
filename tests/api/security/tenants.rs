//! Tenant isolation over real connections: a run belongs to the tenant
//! whose key started it; to every other tenant it does not exist, on every
//! RPC; ListRuns shows only the caller's runs; idempotency keys are per
//! tenant; and each tenant has its own budget of executing runs.

use std::time::{Duration, Instant};

use agentd::limits::Limits;
use agentd::pb;
use tonic::{Code, Status};
use tonic_types::StatusExt;

use super::auth::{two_tenants, ACME_KEY, GLOBEX_KEY};
use super::server::{prompt, start, write_file, KeyedClient, SecureServer};
use crate::helpers::{collect, finish_reason, run_id, status_of};

async fn get_run(client: &mut KeyedClient, run_id: &str) -> Result<pb::Run, Status> {
    client
        .get_run(pb::GetRunRequest {
            run_id: run_id.into(),
        })
        .await
        .map(|r| r.into_inner())
}

/// Asserts `status` is exactly what a run that does not exist gets.
fn assert_not_found(status: &Status, nobody: &Status, rpc: &str) {
    assert_eq!(status.code(), Code::NotFound, "{rpc}: {status:?}");
    assert_eq!(status.message(), nobody.message(), "{rpc} tells nothing more");
    assert_eq!(
        status.get_details_error_info().map(|info| info.reason),
        nobody.get_details_error_info().map(|info| info.reason),
        "{rpc}"
    );
}

#[tokio::test]
async fn another_tenants_run_is_not_found_on_every_rpc() {
    let server = two_tenants().await;
    let mut acme = server.client(Some(ACME_KEY)).await;
    let mut globex = server.client(Some(GLOBEX_KEY)).await;
    let opening = start(&mut acme, prompt("Help me pick a plan")).await.unwrap();
    assert_eq!(finish_reason(&opening), pb::FinishReason::Suspended);
    let run = run_id(&opening);
    let nobody = get_run(&mut globex, &uuid::Uuid::now_v7().to_string())
        .await
        .unwrap_err();

    let status = get_run(&mut globex, &run).await.unwrap_err();
    assert_not_found(&status, &nobody, "GetRun");
    let resume = pb::ResumeRequest {
        run_id: run.clone(),
        answer: Some(pb::resume_request::Answer::Text("Pro".into())),
        ..Default::default()
    };
    let status = globex.resume(resume.clone()).await.unwrap_err();
    assert_not_found(&status, &nobody, "Resume");
    let subscribe = pb::SubscribeRunRequest {
        run_id: run.clone(),
        after_seq: 0,
    };
    let status = globex.subscribe_run(subscribe).await.unwrap_err();
    assert_not_found(&status, &nobody, "SubscribeRun");
    let cancel = pb::CancelRunRequest {
        run_id: run.clone(),
        reason: "not yours".into(),
    };
    let status = globex.cancel_run(cancel).await.unwrap_err();
    assert_not_found(&status, &nobody, "CancelRun");
    let listed = globex
        .list_runs(pb::ListRunsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert!(listed.runs.iter().all(|r| r.run_id != run), "{listed:?}");

    // Nothing the other tenant did changed the run; its owner resumes it.
    let stored = get_run(&mut acme, &run).await.unwrap();
    assert_eq!(status_of(&stored), pb::RunStatus::Suspended);
    assert_eq!(stored.last_seq, opening.last().unwrap().seq);
    let chunks = collect(acme.resume(resume).await.unwrap().into_inner())
        .await
        .unwrap();
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
}

#[tokio::test]
async fn list_runs_shows_only_the_callers_runs() {
    let server = two_tenants().await;
    let mut acme = server.client(Some(ACME_KEY)).await;
    let mut globex = server.client(Some(GLOBEX_KEY)).await;
    // Globex's runs first: older than every run of acme's.
    let mut globex_runs = Vec::new();
    for text in ["free text", "plain"] {
        globex_runs.push(run_id(&start(&mut globex, prompt(text)).await.unwrap()));
    }
    let mut acme_runs = Vec::new();
    for text in ["Help me pick a plan", "plain", "multi"] {
        acme_runs.push(run_id(&start(&mut acme, prompt(text)).await.unwrap()));
    }
    acme_runs.reverse();
    globex_runs.reverse();
    let ids =
        |response: pb::ListRunsResponse| response.runs.into_iter().map(|r| r.run_id).collect::<Vec<_>>();
    let listed = acme
        .list_runs(pb::ListRunsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ids(listed), acme_runs);
    let listed = globex
        .list_runs(pb::ListRunsRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ids(listed), globex_runs);

    // Filters and pages stay within the tenant.
    let suspended = pb::ListRunsRequest {
        status: pb::RunStatus::Suspended as i32,
        ..Default::default()
    };
    let listed = globex.list_runs(suspended).await.unwrap().into_inner();
    assert_eq!(ids(listed), vec![globex_runs[1].clone()]);
    let first_page = acme
        .list_runs(pb::ListRunsRequest {
            page_size: 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let token = first_page.next_page_token.clone();
    assert!(!token.is_empty(), "more of acme's runs follow");
    assert_eq!(ids(first_page), vec![acme_runs[0].clone()]);
    let rest = globex
        .list_runs(pb::ListRunsRequest {
            page_token: token,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    // Every run before acme's cursor, of globex's only: both of them
    // (older than the cursor), none of acme's.
    assert_eq!(
        ids(rest),
        globex_runs,
        "another tenant's page token shows only the caller's runs"
    );
}

#[tokio::test]
async fn request_ids_are_scoped_per_tenant() {
    let server = two_tenants().await;
    let mut acme = server.client(Some(ACME_KEY)).await;
    let mut globex = server.client(Some(GLOBEX_KEY)).await;
    let keyed = |text: &str| pb::StreamAgentRequest {
        request_id: "order-42".into(),
        ..prompt(text)
    };
    let first = start(&mut acme, keyed("Help me pick a plan")).await.unwrap();
    let theirs = start(&mut globex, keyed("plain for globex")).await.unwrap();
    assert_ne!(
        run_id(&first),
        run_id(&theirs),
        "the same key, another tenant: another run"
    );
    assert_eq!(finish_reason(&theirs), pb::FinishReason::Stop);
    let retry = start(&mut acme, keyed("Help me pick a plan")).await.unwrap();
    assert_eq!(
        run_id(&retry),
        run_id(&first),
        "a retry of the same tenant: the same run"
    );
    assert_eq!(retry, first, "replayed, chunk for chunk");
}

/// A run that executes until its stream is dropped: a million deltas
/// nobody reads, cancelled when its client leaves.
fn slow() -> pb::StreamAgentRequest {
    pb::StreamAgentRequest {
        options: Some(pb::RunOptions {
            on_disconnect: pb::DisconnectPolicy::Cancel as i32,
            ..Default::default()
        }),
        ..prompt("stream 1000000")
    }
}

/// Starts a run and returns its open stream, unread.
async fn hold(
    client: &mut KeyedClient,
    request: pb::StreamAgentRequest,
) -> Result<tonic::Streaming<pb::AgentChunk>, Status> {
    Ok(client.stream_agent(request).await?.into_inner())
}

#[tokio::test]
async fn concurrent_runs_per_tenant() {
    let server = SecureServer::start(|dir, settings| {
        let keys = format!("acme:{ACME_KEY}\nglobex:{GLOBEX_KEY}\n");
        settings.auth.api_keys_file = Some(write_file(dir, "api.keys", &keys));
        settings.limits = Limits {
            max_concurrent_runs_per_tenant: 2,
            ..Limits::default()
        };
    })
    .await;
    let mut acme = server.client(Some(ACME_KEY)).await;
    let mut globex = server.client(Some(GLOBEX_KEY)).await;
    // A suspended run executes nothing: it does not count.
    let waiting = start(&mut acme, prompt("Help me pick a plan")).await.unwrap();

    let first = hold(&mut acme, slow()).await.expect("one executing run");
    let second = hold(&mut acme, slow())
        .await
        .expect("two executing runs: the limit");
    let refused = hold(&mut acme, slow()).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("limits.max_concurrent_runs_per_tenant"),
        "{refused:?}"
    );
    let info = refused.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.reason, "CONCURRENT_RUNS_EXHAUSTED");
    assert_eq!(info.metadata.get("max").map(String::as_str), Some("2"));
    assert!(refused.get_details_quota_failure().is_some(), "{refused:?}");

    // A Resume would execute too: refused, and the run stays suspended.
    let resume = pb::ResumeRequest {
        run_id: run_id(&waiting),
        answer: Some(pb::resume_request::Answer::Text("Pro".into())),
        ..Default::default()
    };
    let status = acme.resume(resume.clone()).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let stored = get_run(&mut acme, &run_id(&waiting)).await.unwrap();
    assert_eq!(status_of(&stored), pb::RunStatus::Suspended);

    // Another tenant has a budget of its own.
    let theirs = hold(&mut globex, slow())
        .await
        .expect("globex is not limited by acme");

    // Once one of acme's runs ends, acme may run another.
    drop(first);
    let give_up = Instant::now() + Duration::from_secs(20);
    let resumed = loop {
        match acme.resume(resume.clone()).await {
            Ok(stream) => break stream.into_inner(),
            Err(status) if status.code() == Code::ResourceExhausted && Instant::now() < give_up => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(status) => panic!("the slot was never given back: {status:?}"),
        }
    };
    let chunks = collect(resumed).await.unwrap();
    assert_eq!(finish_reason(&chunks), pb::FinishReason::Stop);
    drop((second, theirs));
}
