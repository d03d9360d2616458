//! Races and sharing through a real `agentd` process: a Resume racing a
//! CancelRun on the same suspension (every stream keeps its contract, and
//! the stream, GetRun and the stored history agree), and a second server
//! refused on a SQLite store that a first one holds.

use std::time::Duration;

use agentd::pb::{self, FinishReason, RunStatus};
use tonic::Code;

use crate::helpers::{assert_segment, collect, finish_reason, resume_request, run_id, status_of};
use crate::process::{get_run, stream_prompt, subscribe, ServerProcess};

const RACES: usize = 25;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resume_racing_a_cancel_gets_its_continuation_or_a_status_and_all_agree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = ServerProcess::start(dir.path());
    let (mut resumes, mut cancels) = (server.client().await, server.client().await);
    let mut reader = server.client().await;
    let mut refused = 0;
    for _ in 0..RACES {
        let id = run_id(&stream_prompt(&mut reader, "pick a plan").await);
        let answer = resume_request(&id, "", pb::resume_request::Answer::Text("Pro".into()));
        let cancel = pb::CancelRunRequest {
            run_id: id.clone(),
            reason: "changed my mind".into(),
        };
        let (resumed, cancelled) = tokio::join!(
            async { collect(resumes.resume(answer).await?.into_inner()).await },
            cancels.cancel_run(cancel),
        );
        let run = get_run(&mut reader, &id).await;
        let history = collect(subscribe(&mut reader, &id, 0).await)
            .await
            .expect("the history");
        match resumed {
            Ok(chunks) => {
                assert_segment(&chunks);
                let first = chunks[0].seq as usize;
                assert_eq!(
                    &history[first - 1..first - 1 + chunks.len()],
                    chunks.as_slice(),
                    "the stream is the stored history"
                );
                let expected = match finish_reason(&chunks) {
                    FinishReason::Stop => RunStatus::Completed,
                    FinishReason::Cancelled => RunStatus::Cancelled,
                    other => panic!("a continuation ends stopped or cancelled, not {other:?}"),
                };
                assert_eq!(status_of(&run), expected);
                assert_eq!(run.last_seq, chunks.last().unwrap().seq);
                match cancelled {
                    Ok(cancelled) => assert_eq!(status_of(&cancelled.into_inner()), RunStatus::Cancelled),
                    Err(status) => {
                        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
                        assert_eq!(expected, RunStatus::Completed);
                    }
                }
            }
            Err(status) => {
                refused += 1;
                assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
                assert!(
                    status.message().contains("run is cancelled, not suspended"),
                    "the loser is told what the run became: {status:?}"
                );
                let cancelled = cancelled.expect("the cancel won").into_inner();
                assert_eq!(status_of(&cancelled), RunStatus::Cancelled);
                assert_eq!(status_of(&run), RunStatus::Cancelled);
                assert_eq!(run.last_seq, history.last().unwrap().seq);
            }
        }
    }
    eprintln!("{refused} of {RACES} Resumes lost the race to the cancel");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_server_on_a_held_sqlite_store_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let first = ServerProcess::start(dir.path());
    let second = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env_remove("AGENTD_STORE")
        .env_remove("AGENTD_CONFIG")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let second = tokio::time::timeout(Duration::from_secs(30), second)
        .await
        .expect("the second server gives up at once")
        .expect("run agentd");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        !second.status.success(),
        "the second server must not serve: {stderr}"
    );
    let holder = format!("in use by another process (pid {})", first.pid());
    assert!(stderr.contains(&holder), "{stderr}");
    let lock = dir.path().join("agentd.sqlite3.lock");
    assert!(stderr.contains(&lock.display().to_string()), "{stderr}");
    assert!(stderr.contains("PostgreSQL"), "{stderr}");
    // The first goes on serving.
    let mut client = first.client().await;
    let chunks = stream_prompt(&mut client, "pick a plan").await;
    assert_segment(&chunks);
}
