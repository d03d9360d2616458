//! A Resume's claim is a commit, stored (with the continuation up to its
//! next durable point) before anything of the continuation streams, in a
//! store that one process owns as in a shared one; of racing claims (two
//! Resumes, a Resume and a CancelRun) exactly one goes through, and the
//! loser is told what the run became, before any chunk.
//! The store here holds every write of an existing run on request, so that
//! the tests can line the racing writes up.

use std::sync::Arc;

use agentd::pb::{self, FinishReason, RunStatus};
use agentd::runtime::RuntimeConfig;
use tonic::Code;

use crate::controlled_store::ControlledStore;
use crate::helpers::{collect, finish_reason, run_id, status_of, TestServer};

/// A server on a held store, with a run suspended on the plan question.
async fn suspended_run() -> (TestServer, Arc<ControlledStore>, String, tempfile::TempDir) {
    let (server, store, temp) = ControlledStore::serve(RuntimeConfig::default()).await;
    let id = run_id(&server.stream("pick a plan").await);
    (server, store, id, temp)
}

/// Resumes `id` with `text` on a connection of its own, collecting the
/// stream.
fn spawn_resume(
    server: &TestServer,
    id: &str,
    text: &str,
) -> tokio::task::JoinHandle<Result<Vec<pb::AgentChunk>, tonic::Status>> {
    let mut client = server.client();
    let request = crate::helpers::resume_request(id, "", pb::resume_request::Answer::Text(text.into()));
    tokio::spawn(async move { collect(client.resume(request).await?.into_inner()).await })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_claim_is_stored_before_its_continuation_streams_and_one_of_two_wins() {
    let (server, store, id, _temp) = suspended_run().await;
    let suspended = server.get_run(&id).await;
    store.hold(true);
    let first = spawn_resume(&server, &id, "Pro");
    store.wait_for_writes(1).await;

    // The claim waits for the store: nothing streams, nothing changed.
    assert_eq!(server.get_run(&id).await, suspended);
    assert!(
        !first.is_finished(),
        "the Resume answers only once its claim is stored"
    );
    // One process owns this store: the first claim is reserved here before
    // it is written, and a second is refused at once, before any chunk,
    // the run as it was.
    let refused = spawn_resume(&server, &id, "Basic")
        .await
        .unwrap()
        .expect_err("the second claim is refused");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    assert!(
        refused
            .message()
            .contains("another Resume claimed this suspension"),
        "the loser is told why: {refused:?}"
    );
    assert_eq!(server.get_run(&id).await, suspended);

    store.hold(false);
    let chunks = first.await.unwrap().expect("the first claim goes through");
    assert_eq!(finish_reason(&chunks), FinishReason::Stop);
    let run = server.get_run(&id).await;
    assert_eq!(status_of(&run), RunStatus::Completed);
    assert_eq!(chunks.first().unwrap().seq, suspended.last_seq + 1);
    assert_eq!(run.last_seq, chunks.last().unwrap().seq);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resume_and_a_cancel_racing_for_a_suspension_agree_on_what_happened() {
    let (server, store, id, _temp) = suspended_run().await;
    store.hold(true);
    let resumed = spawn_resume(&server, &id, "Pro");
    store.wait_for_writes(1).await;
    let cancel = tokio::spawn({
        let mut client = server.client();
        let request = pb::CancelRunRequest {
            run_id: id.clone(),
            reason: "too late".into(),
        };
        async move { client.cancel_run(request).await }
    });
    // The cancel's own commit waits behind the claim's.
    store.wait_for_writes(2).await;
    store.hold(false);

    // Both writes go on at once, and exactly one of them is stored: the
    // claim (then the cancel interrupts its continuation or finds it
    // completed), or the cancel (then the Resume is told so, before any
    // chunk).
    let cancelled = cancel.await.unwrap();
    let resumed = resumed.await.unwrap();
    let run = server.get_run(&id).await;
    let chunks = match resumed {
        Ok(chunks) => chunks,
        Err(refused) => {
            assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
            assert!(
                refused.message().contains("run is cancelled, not suspended"),
                "{refused:?}"
            );
            assert!(cancelled.is_ok(), "the cancel won: {cancelled:?}");
            assert_eq!(status_of(&run), RunStatus::Cancelled);
            return;
        }
    };
    match cancelled {
        Err(refused) => {
            assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
            assert_eq!(finish_reason(&chunks), FinishReason::Stop);
            assert_eq!(status_of(&run), RunStatus::Completed);
        }
        Ok(_) => {
            assert_eq!(finish_reason(&chunks), FinishReason::Cancelled);
            assert_eq!(status_of(&run), RunStatus::Cancelled);
        }
    }
    assert_eq!(run.last_seq, chunks.last().unwrap().seq);
}
