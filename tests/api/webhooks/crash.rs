//! `kill -9` of the delivering server between a run's change and its
//! delivery: the receiver holds the first attempt open without answering,
//! the server dies, and the restarted server (same store) delivers the
//! same message again once the dead attempt's lease runs out, then the
//! run's next event.

use std::time::Duration;

use super::receiver::{Answer, Received, Receiver};
use super::{start_server, webhook_table, write_config};
use crate::process::stream_prompt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_interrupted_by_kill_9_is_made_after_the_restart() {
    let receiver = Receiver::start([Answer::Hang]).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    // A short timeout, so that the dead attempt's lease runs out soon.
    let config = write_config(
        dir.path(),
        &[webhook_table("crash", &receiver.url("crash"), "timeout = \"1s\"")
            .replace("timeout = \"2s\"\n", "")],
    );
    let mut server = start_server(&config, &data, &[]);
    let mut client = server.client().await;
    let run = stream_prompt(&mut client, "plain").await;
    let run_id = run[0].run_id.clone();

    // The start is being delivered, unanswered; the completion is stored
    // and waits behind it.
    let first = receiver.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(first[0].event_type(), "run.started");
    server.kill_hard();
    drop(client);

    let _restarted = start_server(&config, &data, &[]);
    let received = receiver.wait_for(3, Duration::from_secs(20)).await;
    let types: Vec<String> = received.iter().map(Received::event_type).collect();
    assert_eq!(types, ["run.started", "run.started", "run.completed"]);
    assert!(received.iter().all(|r| r.run_id() == run_id));
    assert_eq!(received[1].id, received[0].id, "the same message again");
    assert_eq!(received[1].body, received[0].body);
    assert!(received.iter().all(|r| r.verified.is_ok()), "{received:?}");
}
