//! Threads belong to the tenant that created them: every thread RPC on
//! another tenant's thread is NOT_FOUND, exactly like a thread that does
//! not exist, and a StreamAgent with another tenant's thread id uses the
//! caller's own, separate thread.

use agentd::pb;
use tonic::Code;
use tonic_types::StatusExt;

use crate::helpers::{collect, run_id};
use crate::security::auth::{two_tenants, ACME_KEY, GLOBEX_KEY};
use crate::security::server::KeyedClient;

async fn stream(client: &mut KeyedClient, thread: &str, prompt: &str) -> Vec<pb::AgentChunk> {
    let response = client
        .stream_agent(super::on_thread(thread, prompt))
        .await
        .expect("StreamAgent");
    collect(response.into_inner()).await.expect("stream")
}

/// GetThread and DeleteThread of `thread`, as `client` sees them.
async fn thread_rpcs(client: &mut KeyedClient, thread: &str) -> Vec<(&'static str, tonic::Status)> {
    let get = client
        .get_thread(pb::GetThreadRequest {
            thread_id: thread.into(),
        })
        .await
        .expect_err("GetThread");
    let delete = client
        .delete_thread(pb::DeleteThreadRequest {
            thread_id: thread.into(),
        })
        .await
        .expect_err("DeleteThread");
    vec![("GetThread", get), ("DeleteThread", delete)]
}

#[tokio::test]
async fn another_tenants_thread_is_not_found_on_every_thread_rpc() {
    let server = two_tenants().await;
    let mut acme = server.client(Some(ACME_KEY)).await;
    let mut globex = server.client(Some(GLOBEX_KEY)).await;
    let acme_run = run_id(&stream(&mut acme, "shared", "pick a plan").await);

    let foreign = thread_rpcs(&mut globex, "shared").await;
    let missing = thread_rpcs(&mut globex, "no-such-thread").await;
    for ((rpc, status), (_, nothing)) in foreign.iter().zip(&missing) {
        assert_eq!(status.code(), Code::NotFound, "{rpc}");
        assert_eq!(status.message(), nothing.message(), "{rpc}: indistinguishable");
        assert_eq!(
            status.get_details_error_info().map(|i| i.reason),
            nothing.get_details_error_info().map(|i| i.reason),
            "{rpc}"
        );
    }
    let listed = globex
        .list_threads(pb::ListThreadsRequest::default())
        .await
        .expect("ListThreads")
        .into_inner();
    assert!(listed.threads.is_empty(), "{listed:?}");

    // globex's "shared" is a thread of its own: no history, not blocked by
    // acme's suspended run, and auto-resume cannot answer acme's question.
    let request = pb::StreamAgentRequest {
        auto_resume: true,
        ..super::on_thread("shared", "recap")
    };
    let response = globex.stream_agent(request).await.expect("globex's own thread");
    let chunks = collect(response.into_inner()).await.expect("stream");
    assert_ne!(run_id(&chunks), acme_run);
    assert_eq!(
        crate::helpers::text(&chunks),
        "Recap: 1 message, the first from the user. Earlier messages: none. Answers: none."
    );

    // acme's thread is untouched, its run still suspended.
    let read = acme
        .get_thread(pb::GetThreadRequest {
            thread_id: "shared".into(),
        })
        .await
        .expect("acme's GetThread")
        .into_inner();
    assert_eq!(read.run_ids, [acme_run]);
    assert_eq!(read.latest_run_status, pb::RunStatus::Suspended as i32);
    let acme_list = acme
        .list_threads(pb::ListThreadsRequest::default())
        .await
        .expect("ListThreads")
        .into_inner();
    assert_eq!(acme_list.threads.len(), 1);
}
