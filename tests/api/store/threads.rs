//! Threads in the store: a thread's run is created with a compare-and-set
//! on the thread's latest run (exactly one of two racing starts wins, and
//! a refused start stores nothing), threads are scoped per tenant, listed
//! newest first in keyset pages, found idle by their last activity, and
//! deleted with their runs and events.

use std::sync::Arc;

use agentd::domain::{
    Lease, Phase, RunId, RunRecord, RunStatus, Tenant, ThreadCursor, ThreadId, ThreadLink, ThreadQuery,
    Timestamp,
};
use agentd::store::StoreError;
use tokio::sync::Barrier;

use super::{events_of, suspended_run, suspension_events, AnyStore};

pub(super) async fn threads_conform(store: &AnyStore) {
    a_thread_is_created_with_its_first_run(store).await;
    the_next_run_must_follow_the_latest(store).await;
    racing_starts_have_one_winner(store).await;
    threads_are_scoped_per_tenant(store).await;
    threads_list_newest_first_in_pages(store).await;
    idle_threads_are_found_by_last_activity(store).await;
    deleting_a_thread_deletes_its_runs(store).await;
}

fn fresh_tenant(label: &str) -> Tenant {
    Tenant::new(&format!("{label}-{}", RunId::new().0.simple())).expect("a tenant id")
}

fn thread_id(label: &str) -> ThreadId {
    ThreadId::new(label).expect("a thread id")
}

/// A completed run of `tenant`'s thread, after `previous`.
fn thread_run(tenant: &Tenant, thread: &ThreadId, previous: Option<RunId>) -> RunRecord {
    let mut run = super::edited(&suspended_run("assistant"), |run| {
        run.phase = Phase::Completed {
            final_text: "done".into(),
        };
    });
    run.tenant = tenant.clone();
    run.thread = Some(ThreadLink {
        id: thread.clone(),
        previous,
    });
    run
}

async fn a_thread_is_created_with_its_first_run(store: &AnyStore) {
    let tenant = fresh_tenant("first");
    let thread = thread_id("support:1");
    assert!(matches!(
        store.load_thread(&tenant, &thread).await,
        Err(StoreError::NotFound)
    ));
    let run = thread_run(&tenant, &thread, None);
    store
        .create_run(&run, &suspension_events(1))
        .await
        .expect("create");
    let stored = store.load_thread(&tenant, &thread).await.expect("load thread");
    assert_eq!(stored.tenant, tenant);
    assert_eq!(stored.id, thread);
    assert_eq!(stored.latest_run, run.id);
    assert_eq!(stored.created_at, run.created_at);
    assert_eq!(stored.updated_at, run.created_at);
    let latest = stored.latest.expect("the latest run's status");
    assert_eq!(latest.status, RunStatus::Completed);
    assert_eq!(latest.updated_at, run.updated_at);
    assert_eq!(store.load_run(run.id).await.expect("load"), run);
    assert_eq!(
        store.thread_runs(&tenant, &thread).await.expect("runs"),
        vec![run.clone()]
    );

    // A second "first" run of the same thread is refused, whole.
    let again = thread_run(&tenant, &thread, None);
    assert!(matches!(
        store.create_run(&again, &suspension_events(1)).await,
        Err(StoreError::ThreadMoved)
    ));
    assert!(matches!(
        store.load_run(again.id).await,
        Err(StoreError::NotFound)
    ));
}

async fn the_next_run_must_follow_the_latest(store: &AnyStore) {
    let tenant = fresh_tenant("next");
    let thread = thread_id("chat.next");
    let first = thread_run(&tenant, &thread, None);
    store.create_run(&first, &[]).await.expect("first");
    let mut second = thread_run(&tenant, &thread, Some(first.id));
    second.created_at = Timestamp(first.created_at.0 + 10);
    store
        .create_run(&second, &suspension_events(1))
        .await
        .expect("second");
    let stored = store.load_thread(&tenant, &thread).await.expect("load");
    assert_eq!(stored.latest_run, second.id);
    assert_eq!(stored.created_at, first.created_at);
    assert_eq!(stored.updated_at, second.created_at);

    // Following a run that is no longer the latest changes nothing.
    let stale = thread_run(&tenant, &thread, Some(first.id));
    assert!(matches!(
        store.create_run(&stale, &suspension_events(1)).await,
        Err(StoreError::ThreadMoved)
    ));
    assert!(matches!(
        store.load_run(stale.id).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(
        store
            .load_thread(&tenant, &thread)
            .await
            .expect("load")
            .latest_run,
        second.id
    );
    // A taken run id with a right thread link is AlreadyExists, and the
    // thread stays as it was.
    let mut duplicate = thread_run(&tenant, &thread, Some(second.id));
    duplicate.id = first.id;
    assert!(matches!(
        store.create_run(&duplicate, &[]).await,
        Err(StoreError::AlreadyExists)
    ));
    assert_eq!(
        store
            .load_thread(&tenant, &thread)
            .await
            .expect("load")
            .latest_run,
        second.id
    );
    let ids: Vec<RunId> = store
        .thread_runs(&tenant, &thread)
        .await
        .expect("runs")
        .iter()
        .map(|run| run.id)
        .collect();
    assert_eq!(ids, vec![first.id, second.id]);
}

async fn racing_starts_have_one_winner(store: &AnyStore) {
    const RACERS: usize = 8;
    let tenant = fresh_tenant("race");
    let thread = thread_id("race");
    let first = thread_run(&tenant, &thread, None);
    store.create_run(&first, &[]).await.expect("first");
    let barrier = Arc::new(Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|_| {
            let (store, barrier) = (Arc::clone(store), Arc::clone(&barrier));
            let run = thread_run(&tenant, &thread, Some(first.id));
            tokio::spawn(async move {
                barrier.wait().await;
                store
                    .create_run(&run, &suspension_events(1))
                    .await
                    .map(|()| run.id)
            })
        })
        .collect();
    let mut winners = Vec::new();
    for racer in racers {
        match racer.await.expect("racer") {
            Ok(id) => winners.push(id),
            Err(StoreError::ThreadMoved) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one start wins");
    assert_eq!(
        store
            .load_thread(&tenant, &thread)
            .await
            .expect("load")
            .latest_run,
        winners[0]
    );
    assert_eq!(store.thread_runs(&tenant, &thread).await.expect("runs").len(), 2);
}

async fn threads_are_scoped_per_tenant(store: &AnyStore) {
    let (acme, globex) = (fresh_tenant("acme"), fresh_tenant("globex"));
    let thread = thread_id("shared-name");
    let ours = thread_run(&acme, &thread, None);
    let theirs = thread_run(&globex, &thread, None);
    store.create_run(&ours, &[]).await.expect("acme's thread");
    store
        .create_run(&theirs, &[])
        .await
        .expect("the same id, another tenant");
    assert_eq!(
        store.load_thread(&acme, &thread).await.expect("acme").latest_run,
        ours.id
    );
    assert_eq!(
        store
            .load_thread(&globex, &thread)
            .await
            .expect("globex")
            .latest_run,
        theirs.id
    );
    assert_eq!(store.thread_runs(&acme, &thread).await.expect("runs"), vec![ours]);
    store
        .delete_thread(&globex, &thread)
        .await
        .expect("delete globex's");
    assert!(store.load_thread(&acme, &thread).await.is_ok(), "acme's stays");
    let other = fresh_tenant("nobody");
    assert!(matches!(
        store.delete_thread(&other, &thread).await,
        Err(StoreError::NotFound)
    ));
}

async fn threads_list_newest_first_in_pages(store: &AnyStore) {
    let tenant = fresh_tenant("list");
    let base = Timestamp::now().0;
    // Threads that share a creation time: the id breaks the tie, compared
    // bytewise on every backend ("C" before "b").
    let created = [(0, "a"), (5, "b"), (5, "c"), (5, "C"), (9, "d.e:f")];
    for (offset, name) in created {
        let mut run = thread_run(&tenant, &thread_id(name), None);
        run.created_at = Timestamp(base + offset);
        store.create_run(&run, &[]).await.expect("create");
    }
    let mut other = thread_run(&fresh_tenant("elsewhere"), &thread_id("z"), None);
    other.created_at = Timestamp(base + 7);
    store.create_run(&other, &[]).await.expect("another tenant's");

    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let query = ThreadQuery {
            tenant: tenant.clone(),
            after: after.clone(),
            limit: 3,
        };
        let page = store.list_threads(&query).await.expect("list");
        assert!(page.iter().all(|thread| thread.tenant == tenant));
        assert!(page.iter().all(|thread| thread.latest.is_some()));
        seen.extend(page.iter().map(|thread| thread.id.to_string()));
        match page.last() {
            Some(last) if page.len() == 3 => {
                after = Some(ThreadCursor {
                    created_at: last.created_at,
                    id: last.id.clone(),
                })
            }
            _ => break,
        }
    }
    assert_eq!(seen, ["d.e:f", "c", "b", "C", "a"]);
}

async fn idle_threads_are_found_by_last_activity(store: &AnyStore) {
    let tenant = fresh_tenant("idle");
    let long_ago = |micros: i64| Timestamp(1_000_000 + micros);
    // Idle: created and last changed long ago.
    let mut idle = thread_run(&tenant, &thread_id("idle"), None);
    idle.created_at = long_ago(0);
    idle.updated_at = long_ago(1);
    // Created long ago, but its latest run changed just now.
    let mut active = thread_run(&tenant, &thread_id("active"), None);
    active.created_at = long_ago(0);
    // Long ago, but still running.
    let mut running = thread_run(&tenant, &thread_id("running"), None);
    running.created_at = long_ago(0);
    running.updated_at = long_ago(1);
    running = super::edited(&running, |run| {
        run.phase = Phase::Running {
            lease: Lease::vacant(),
            pending: Vec::new(),
        };
    });
    for run in [&idle, &active, &running] {
        store.create_run(run, &[]).await.expect("create");
    }
    let cutoff = long_ago(1_000);
    let found = store.idle_threads(cutoff, 10_000).await.expect("idle");
    assert!(found.contains(&(tenant.clone(), thread_id("idle"))), "{found:?}");
    assert!(!found.contains(&(tenant.clone(), thread_id("active"))));
    assert!(!found.contains(&(tenant.clone(), thread_id("running"))));
    assert!(found.len() <= 10_000);
    assert!(store.idle_threads(cutoff, 0).await.expect("idle").is_empty());
}

async fn deleting_a_thread_deletes_its_runs(store: &AnyStore) {
    let tenant = fresh_tenant("delete");
    let thread = thread_id("gone");
    let first = thread_run(&tenant, &thread, None);
    let second = thread_run(&tenant, &thread, Some(first.id));
    store
        .create_run(&first, &suspension_events(1))
        .await
        .expect("first");
    store
        .create_run(&second, &suspension_events(1))
        .await
        .expect("second");
    let unrelated = suspended_run("assistant");
    let unrelated_events = suspension_events(1);
    store
        .create_run(&unrelated, &unrelated_events)
        .await
        .expect("unrelated");

    store.delete_thread(&tenant, &thread).await.expect("delete");
    for id in [first.id, second.id] {
        assert!(matches!(store.load_run(id).await, Err(StoreError::NotFound)));
        assert!(matches!(
            store.read_events(id, 0).await,
            Err(StoreError::NotFound)
        ));
    }
    assert!(matches!(
        store.load_thread(&tenant, &thread).await,
        Err(StoreError::NotFound)
    ));
    assert!(store
        .thread_runs(&tenant, &thread)
        .await
        .expect("runs")
        .is_empty());
    assert!(matches!(
        store.delete_thread(&tenant, &thread).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(events_of(store, unrelated.id).await, unrelated_events);
    // Their events went too: a read checks the run first, so only a run
    // stored again under the same id could see any left behind.
    for id in [first.id, second.id] {
        let mut again = suspended_run("assistant");
        again.id = id;
        store.create_run(&again, &[]).await.expect("the id again");
        assert_eq!(events_of(store, id).await, [], "events of run {id} left behind");
    }

    // The id can start a new thread afterwards.
    let fresh = thread_run(&tenant, &thread, None);
    store
        .create_run(&fresh, &[])
        .await
        .expect("a new thread of the same id");
}
