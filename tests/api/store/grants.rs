//! Grants in the store: put, read by run (scope run) and by thread (scope
//! thread) oldest first, each tenant's only; deleted once, by their
//! tenant only; a thread's go with it.

use std::time::Duration;

use agentd::domain::{Grant, GrantScope, Remember, RunId, Tenant, ThreadId, ThreadLink, Timestamp};

use super::run_events::fresh_tenant;
use super::AnyStore;

pub(super) async fn grants_conform(store: &AnyStore) {
    grants_are_read_by_scope_and_deleted_by_their_tenant(store).await;
    a_threads_grants_go_with_it(store).await;
}

fn grant(tenant: &Tenant, run: RunId, thread: Option<&ThreadId>, scope: GrantScope, at: i64) -> Grant {
    let remember = Remember {
        scope,
        duration: Some(Duration::from_secs(60)),
    };
    Grant::new(
        (tenant, run, thread),
        "send_email",
        remember,
        "Ada Lovelace",
        Timestamp(at),
    )
}

async fn grants_are_read_by_scope_and_deleted_by_their_tenant(store: &AnyStore) {
    let tenant = fresh_tenant("grants");
    let other = fresh_tenant("grants-other");
    let thread = ThreadId::new("support:grants").unwrap();
    let (run, later) = (RunId::new(), RunId::new());
    let of_run = grant(&tenant, run, Some(&thread), GrantScope::Run, 2_000);
    let of_thread = grant(&tenant, run, Some(&thread), GrantScope::Thread, 1_000);
    let foreign = grant(&other, run, Some(&thread), GrantScope::Thread, 3_000);
    for made in [&of_run, &of_thread, &foreign] {
        store.put_grant(made).await.expect("put");
    }
    let read = |run: Option<RunId>, thread: Option<ThreadId>| {
        let tenant = tenant.clone();
        async move { store.grants(&tenant, run, thread.as_ref()).await.expect("read") }
    };
    assert_eq!(
        read(Some(run), Some(thread.clone())).await,
        [of_thread.clone(), of_run.clone()],
        "oldest first, with every field"
    );
    assert_eq!(read(Some(run), None).await, std::slice::from_ref(&of_run));
    assert_eq!(
        read(Some(later), Some(thread.clone())).await,
        std::slice::from_ref(&of_thread)
    );
    assert_eq!(read(None, None).await, []);

    assert!(
        !store.delete_grant(&other, &of_run.id).await.expect("delete"),
        "not its grant"
    );
    assert!(store.delete_grant(&tenant, &of_run.id).await.expect("delete"));
    assert!(
        !store.delete_grant(&tenant, &of_run.id).await.expect("delete"),
        "once"
    );
    assert_eq!(read(Some(run), Some(thread)).await, [of_thread]);
}

async fn a_threads_grants_go_with_it(store: &AnyStore) {
    let tenant = fresh_tenant("grants-thread");
    let thread = ThreadId::new("support:gone").unwrap();
    let mut run = super::suspended_run("assistant");
    run.tenant = tenant.clone();
    run.thread = Some(ThreadLink {
        id: thread.clone(),
        previous: None,
    });
    store.create_run(&run, &[]).await.expect("create");
    let made = grant(&tenant, run.id, Some(&thread), GrantScope::Thread, 1_000);
    store.put_grant(&made).await.expect("put");
    store
        .delete_thread(&tenant, &thread)
        .await
        .expect("delete thread");
    assert_eq!(
        store
            .grants(&tenant, Some(run.id), Some(&thread))
            .await
            .expect("read"),
        []
    );
}
