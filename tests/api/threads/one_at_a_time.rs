//! One run at a time per thread: a start while the latest run is suspended
//! (or running) is FAILED_PRECONDITION naming that run; once it finished,
//! the next run starts; of racing starts exactly one wins.

use agentd::pb;
use tonic::Code;
use tonic_types::StatusExt;

use super::{get_thread, on_thread, stream};
use crate::helpers::{finish_reason, run_id, status_of, TestServer};

#[tokio::test]
async fn a_suspended_latest_run_blocks_the_next() {
    let server = TestServer::start().await;
    let thread = "one-at-a-time";
    let first = stream(&server, on_thread(thread, "pick a plan"))
        .await
        .expect("first");
    let first_id = run_id(&first);

    let refused = stream(&server, on_thread(thread, "plain hello"))
        .await
        .expect_err("busy");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(refused.message().contains(&first_id), "{}", refused.message());
    assert!(refused.message().contains("suspended"), "{}", refused.message());
    let info = refused.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.reason, "THREAD_BUSY");
    assert_eq!(info.metadata["run_id"], first_id);
    assert_eq!(info.metadata["status"], "suspended");
    // Nothing changed: still one run, still suspended.
    let read = get_thread(&server, thread).await.expect("GetThread");
    assert_eq!(read.run_ids, std::slice::from_ref(&first_id));
    assert_eq!(
        status_of(&server.get_run(&first_id).await),
        pb::RunStatus::Suspended
    );

    // Cancelled, it no longer blocks.
    server
        .client()
        .cancel_run(pb::CancelRunRequest {
            run_id: first_id.clone(),
            reason: "changed my mind".into(),
        })
        .await
        .expect("CancelRun");
    let second = stream(&server, on_thread(thread, "recap")).await.expect("second");
    assert_eq!(finish_reason(&second), pb::FinishReason::Stop);
    // The cancelled run's call is in the history with its (declined)
    // result.
    assert_eq!(
        crate::helpers::text(&second),
        "Recap: 4 messages, the first from the user. Earlier messages: \"pick a plan\". Answers: none."
    );
    let read = get_thread(&server, thread).await.expect("GetThread");
    assert_eq!(read.run_ids, [first_id, run_id(&second)]);
}

#[tokio::test]
async fn of_racing_starts_on_one_thread_exactly_one_wins() {
    const RACERS: usize = 6;
    let server = TestServer::start().await;
    let thread = "race";
    // A finished first run, so that every racer follows it.
    stream(&server, on_thread(thread, "plain hello"))
        .await
        .expect("first");
    let racers: Vec<_> = (0..RACERS)
        .map(|_| {
            let mut client = server.client();
            tokio::spawn(async move {
                let response = client.stream_agent(on_thread(thread, "pick a plan")).await?;
                crate::helpers::collect(response.into_inner()).await
            })
        })
        .collect();
    let mut winners = Vec::new();
    let mut refusals = Vec::new();
    for racer in racers {
        match racer.await.expect("racer") {
            Ok(chunks) => winners.push(run_id(&chunks)),
            Err(status) => refusals.push(status),
        }
    }
    assert_eq!(winners.len(), 1, "refusals: {refusals:?}");
    for status in &refusals {
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert!(status.message().contains(&winners[0]), "{}", status.message());
    }
    let read = get_thread(&server, thread).await.expect("GetThread");
    assert_eq!(read.run_ids.len(), 2);
    assert_eq!(read.latest_run_id, winners[0]);
}
