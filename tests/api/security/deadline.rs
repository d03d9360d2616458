//! Client deadlines (`grpc-timeout`): a stream still going when its
//! deadline passes ends with DEADLINE_EXCEEDED, and the run then does what
//! its `on_disconnect` says, as when the client leaves.

use std::time::{Duration, Instant};

use agentd::pb;
use tonic::Code;

use super::server::{KeyedClient, SecureServer};
use crate::helpers::status_of;

const DEADLINE: Duration = Duration::from_millis(400);

fn slow_run(prompt: &str, on_disconnect: pb::DisconnectPolicy) -> tonic::Request<pb::StreamAgentRequest> {
    let mut request = tonic::Request::new(pb::StreamAgentRequest {
        prompt: prompt.into(),
        options: Some(pb::RunOptions {
            on_disconnect: on_disconnect as i32,
            ..Default::default()
        }),
        ..Default::default()
    });
    request.set_timeout(DEADLINE);
    request
}

/// Polls GetRun until the run is in `wanted` (at most 30 s).
async fn wait_for_status(client: &mut KeyedClient, run_id: &str, wanted: pb::RunStatus) -> pb::Run {
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let run = client
            .get_run(pb::GetRunRequest {
                run_id: run_id.into(),
            })
            .await
            .expect("GetRun")
            .into_inner();
        if status_of(&run) == wanted {
            return run;
        }
        assert!(
            Instant::now() < give_up,
            "the run never became {wanted:?}: {run:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_passed_deadline_ends_the_stream_and_cancels_a_cancel_on_disconnect_run() {
    let server = SecureServer::start(|_, _| {}).await;
    let mut client = server.client(None).await;
    let started = Instant::now();
    let mut stream = client
        .stream_agent(slow_run("stream 1000000", pb::DisconnectPolicy::Cancel))
        .await
        .expect("StreamAgent")
        .into_inner();
    let mut run_id = String::new();
    let mut received = 0usize;
    let status = loop {
        match stream.message().await {
            Ok(Some(chunk)) => {
                run_id = chunk.run_id;
                received += 1;
            }
            Ok(None) => panic!("the stream ended OK after {received} chunks, before its deadline passed"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(started.elapsed() >= DEADLINE, "ended before the deadline");
    assert!(received > 0 && received < 1_000_000, "{received} chunks");
    let run = wait_for_status(&mut client, &run_id, pb::RunStatus::Cancelled).await;
    assert!(run.final_text.is_empty(), "{run:?}");
}

#[tokio::test]
async fn a_passed_deadline_leaves_a_continue_run_running_to_its_end() {
    let server = SecureServer::start(|_, _| {}).await;
    let mut client = server.client(None).await;
    let mut stream = client
        // At least 2 s of deltas, however fast the server: the run outlives
        // the 400 ms deadline.
        .stream_agent(slow_run("stream 2000 every 1 ms", pb::DisconnectPolicy::Continue))
        .await
        .expect("StreamAgent")
        .into_inner();
    // Read one chunk, then nothing: the run outlives the stream.
    let first = stream.message().await.expect("a first chunk").expect("a chunk");
    let run = wait_for_status(&mut client, &first.run_id, pb::RunStatus::Completed).await;
    assert!(
        run.final_text.contains("token1999"),
        "the whole run ran: {}",
        run.final_text.len()
    );
    // The stream itself ended at its deadline, without the end of the run.
    let mut received = 1usize;
    let status = loop {
        match stream.message().await {
            Ok(Some(_)) => received += 1,
            Ok(None) => panic!("the stream ended OK after {received} chunks"),
            Err(status) => break status,
        }
    };
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(received < 2_000, "{received} chunks");
}
