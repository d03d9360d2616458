//! Thread retention, through the library: the sweep deletes the threads
//! idle for longer than the retention, with their runs, and keeps the
//! others (a recent one, and an old one whose latest run just changed).

use std::sync::Arc;
use std::time::Duration;

use agentd::agent::{AgentRegistry, AgentSpec};
use agentd::domain::{Phase, RunId, Tenant, ThreadId, ThreadLink, Timestamp};
use agentd::runtime::{Runtime, RuntimeConfig};
use agentd::store::{MemoryStore, Store, StoreError};

use crate::store::suspended_run;

const DAY: i64 = 86_400 * 1_000_000;

/// Stores a completed first run of `thread`, created `created_days_ago`
/// and last changed `changed_days_ago`.
async fn thread_run(
    store: &Arc<dyn Store>,
    thread: &str,
    created_days_ago: i64,
    changed_days_ago: i64,
) -> RunId {
    let now = Timestamp::now().0;
    let mut run = crate::store::edited(&suspended_run("assistant"), |run| {
        run.phase = Phase::Completed {
            final_text: "done".into(),
        };
    });
    run.created_at = Timestamp(now - created_days_ago * DAY);
    run.updated_at = Timestamp(now - changed_days_ago * DAY);
    run.thread = Some(ThreadLink {
        id: ThreadId::new(thread).expect("thread id"),
        previous: None,
    });
    store.create_run(&run, &[]).await.expect("create");
    run.id
}

#[tokio::test]
async fn idle_threads_are_deleted_with_their_runs() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::default());
    let stale = thread_run(&store, "stale", 40, 40).await;
    let recent = thread_run(&store, "recent", 2, 2).await;
    let revived = thread_run(&store, "revived", 40, 0).await;
    let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
    let runtime = Runtime::new(agents, Arc::clone(&store), RuntimeConfig::default());

    let deleted = runtime
        .sweep_idle_threads(Duration::from_secs(30 * 86_400))
        .await
        .expect("sweep");
    assert_eq!(deleted, 1);
    let tenant = Tenant::default();
    assert!(matches!(
        store.load_thread(&tenant, &ThreadId::new("stale").unwrap()).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(store.load_run(stale).await, Err(StoreError::NotFound)));
    for (thread, run) in [("recent", recent), ("revived", revived)] {
        assert!(store
            .load_thread(&tenant, &ThreadId::new(thread).unwrap())
            .await
            .is_ok());
        assert!(store.load_run(run).await.is_ok());
    }
    // Nothing more to do.
    assert_eq!(
        runtime
            .sweep_idle_threads(Duration::from_secs(30 * 86_400))
            .await
            .expect("sweep"),
        0
    );
}
