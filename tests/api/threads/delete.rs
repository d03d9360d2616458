//! DeleteThread and ListThreads: deleting a thread removes its runs (record
//! and chunks) from the store; listing pages through a tenant's threads.

use agentd::pb;
use tonic::Code;

use super::{get_thread, on_thread, stream};
use crate::helpers::{run_id, settings_in, TestServer};

#[tokio::test]
async fn delete_thread_removes_its_runs_from_the_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = TestServer::start_with(settings_in(dir.path())).await;
    let first = run_id(
        &stream(&server, on_thread("doomed", "plain one"))
            .await
            .expect("first"),
    );
    let second = run_id(
        &stream(&server, on_thread("doomed", "pick a plan"))
            .await
            .expect("second"),
    );
    let kept = run_id(
        &stream(&server, on_thread("kept", "plain other"))
            .await
            .expect("other"),
    );

    let deleted = server
        .client()
        .delete_thread(pb::DeleteThreadRequest {
            thread_id: "doomed".into(),
        })
        .await
        .expect("DeleteThread")
        .into_inner();
    assert_eq!(deleted.thread_id, "doomed");
    assert_eq!(deleted.deleted_run_ids, [first.clone(), second.clone()]);

    for id in [&first, &second] {
        let status = server
            .client()
            .get_run(pb::GetRunRequest { run_id: id.clone() })
            .await
            .expect_err("the run is gone");
        assert_eq!(status.code(), Code::NotFound);
        let status = server
            .client()
            .subscribe_run(pb::SubscribeRunRequest {
                run_id: id.clone(),
                after_seq: 0,
            })
            .await
            .expect_err("its chunks are gone");
        assert_eq!(status.code(), Code::NotFound);
    }
    assert_eq!(
        get_thread(&server, "doomed").await.unwrap_err().code(),
        Code::NotFound
    );
    let again = server
        .client()
        .delete_thread(pb::DeleteThreadRequest {
            thread_id: "doomed".into(),
        })
        .await
        .expect_err("deleted already");
    assert_eq!(again.code(), Code::NotFound);
    assert!(get_thread(&server, "kept").await.is_ok());

    // In the store itself (read beside the running server): no row of the
    // deleted runs is left in any table; the other thread's are all there.
    let db = rusqlite::Connection::open(dir.path().join("agentd.sqlite3")).expect("open the file");
    let rows = |table: &str, column: &str, id: &str| -> i64 {
        db.query_row(
            &format!("SELECT count(*) FROM {table} WHERE {column} = ?1"),
            [id],
            |row| row.get(0),
        )
        .expect("count")
    };
    for id in [&first, &second] {
        assert_eq!(rows("runs", "id", id), 0, "run {id}");
        assert_eq!(rows("event_batches", "run_id", id), 0, "chunks of run {id}");
    }
    assert_eq!(rows("runs", "id", &kept), 1);
    assert!(rows("event_batches", "run_id", &kept) > 0);

    // The id starts a fresh thread afterwards, with no history.
    let fresh = stream(&server, on_thread("doomed", "recap"))
        .await
        .expect("fresh");
    assert_eq!(
        crate::helpers::text(&fresh),
        "Recap: 1 message, the first from the user. Earlier messages: none. Answers: none."
    );
}

#[tokio::test]
async fn list_threads_pages_newest_first() {
    let server = TestServer::start().await;
    let names = ["t-1", "t-2", "t-3", "t-4", "t-5"];
    for name in names {
        stream(&server, on_thread(name, "plain hi")).await.expect("run");
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = server
            .client()
            .list_threads(pb::ListThreadsRequest {
                page_size: 2,
                page_token: token.clone(),
            })
            .await
            .expect("ListThreads")
            .into_inner();
        for thread in &page.threads {
            assert!(thread.messages.is_empty() && thread.run_ids.is_empty());
            assert_eq!(thread.latest_run_status, pb::RunStatus::Completed as i32);
            assert!(!thread.latest_run_id.is_empty());
            seen.push(thread.thread_id.clone());
        }
        if page.next_page_token.is_empty() {
            break;
        }
        assert_eq!(page.threads.len(), 2);
        token = page.next_page_token;
    }
    assert_eq!(seen, ["t-5", "t-4", "t-3", "t-2", "t-1"]);
    let bad = server
        .client()
        .list_threads(pb::ListThreadsRequest {
            page_size: 2,
            page_token: "r1.nonsense".into(),
        })
        .await
        .expect_err("a foreign token");
    assert_eq!(bad.code(), Code::InvalidArgument);
}
