//! Run events in the store: every backend stores one event with each write
//! that creates a run or changes its status (and none with a write that
//! keeps it), in the same atomic write, readable per tenant in one order
//! with positions that rise, after any position, a page at a time; the
//! signal tells of each; a run's events go with its thread.

use std::time::{Duration, Instant};

use agentd::domain::{
    EventPosition, Lease, Phase, RunEvent, RunEventKind, RunId, RunRecord, RunStatus, Tenant, ThreadId,
    ThreadLink, Timestamp,
};
use agentd::store::StoreError;

use super::{status_events, suspended_run, suspension_events, AnyStore};

pub(super) async fn run_events_conform(store: &AnyStore) {
    each_status_change_is_one_event(store).await;
    a_refused_write_stores_no_event(store).await;
    reads_continue_after_any_position(store).await;
    concurrent_runs_keep_their_own_order(store).await;
    a_thread_takes_its_events_along(store).await;
}

pub(super) fn fresh_tenant(label: &str) -> Tenant {
    Tenant::new(&format!("{label}-{}", RunId::new().0.simple())).expect("a tenant id")
}

pub(super) fn running_run(tenant: &Tenant, agent: &str) -> RunRecord {
    super::edited(&suspended_run(agent), |run| {
        run.tenant = tenant.clone();
        run.request_id = None;
        run.phase = Phase::Running {
            lease: Lease {
                owner: "replica-a".into(),
                expires_at: Timestamp(run.created_at.0 + 10_000_000),
            },
            pending: Vec::new(),
        };
    })
}

/// `run` at its next version, in `phase`, a little later.
pub(super) fn next(run: &RunRecord, phase: Phase) -> RunRecord {
    super::edited(run, |next| {
        next.version += 1;
        next.updated_at = Timestamp(run.updated_at.0 + 1_000);
        next.phase = phase;
    })
}

pub(super) fn suspended_like(run: &RunRecord) -> Phase {
    super::suspended_phase(run.created_at)
}

/// Every event of `tenant` after `after`, read a page of `page` at a time
/// until the store has none settling (a shared store's concurrent writes
/// of other tests may hold them back for a moment).
pub(super) async fn all_events(
    store: &AnyStore,
    tenant: &Tenant,
    after: EventPosition,
    page: usize,
) -> Vec<RunEvent> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut events: Vec<RunEvent> = Vec::new();
    let mut position = after;
    loop {
        let read = store
            .read_run_events(Some(tenant), position, page)
            .await
            .expect("read run events");
        if let Some(last) = read.events.last() {
            position = last.position;
        }
        let done = read.events.len() < page && !read.settling;
        events.extend(read.events);
        if done {
            return events;
        }
        assert!(Instant::now() < deadline, "the run events settle");
        if read.settling {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

async fn each_status_change_is_one_event(store: &AnyStore) {
    let tenant = fresh_tenant("events");
    let mut signal = store.run_events_signal();
    signal.borrow_and_update();

    let run = running_run(&tenant, "assistant");
    store.create_run(&run, &[]).await.expect("create");
    assert!(
        signal.has_changed().expect("the store lives"),
        "a new run is signalled"
    );
    signal.borrow_and_update();

    // A write that keeps the status (a step, a renewed lease) is no event.
    let step = next(&run, run.phase().clone());
    store
        .commit(&step, run.version(), &[], &status_events(&step))
        .await
        .expect("a step");
    store
        .append_events(
            run.id,
            step.version(),
            Some(Timestamp(step.updated_at.0 + 5)),
            &[],
        )
        .await
        .expect("a renewal");
    assert!(
        !signal.has_changed().expect("the store lives"),
        "no event, no signal"
    );
    let step = super::edited(&step, |run| run.version += 1);

    let suspended = next(&step, suspended_like(&step));
    store
        .commit(&suspended, step.version(), &[], &status_events(&suspended))
        .await
        .expect("suspend");
    let resumed = next(&suspended, run.phase().clone());
    store
        .commit(&resumed, suspended.version(), &[], &[RunEventKind::Resumed])
        .await
        .expect("resume");
    let completed = next(
        &resumed,
        Phase::Completed {
            final_text: "done".into(),
        },
    );
    store
        .commit(&completed, resumed.version(), &[], &status_events(&completed))
        .await
        .expect("complete");
    assert!(
        signal.has_changed().expect("the store lives"),
        "status changes are signalled"
    );

    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    let kinds: Vec<RunEventKind> = events.iter().map(|event| event.kind).collect();
    assert_eq!(
        kinds,
        [
            RunEventKind::Started,
            RunEventKind::Suspended,
            RunEventKind::Resumed,
            RunEventKind::Completed
        ]
    );
    for (event, (record, status)) in events.iter().zip([
        (&run, RunStatus::Running),
        (&suspended, RunStatus::Suspended),
        (&resumed, RunStatus::Running),
        (&completed, RunStatus::Completed),
    ]) {
        assert_eq!(event.run_id, run.id);
        assert_eq!(event.tenant, tenant);
        assert_eq!(event.agent_id, "assistant");
        assert_eq!(event.thread_id, None);
        assert_eq!(event.status, status);
        assert_eq!(
            event.time, record.updated_at,
            "{:?} at the write's time",
            event.kind
        );
    }
    assert!(
        events.windows(2).all(|pair| pair[0].position < pair[1].position),
        "positions rise: {events:?}"
    );
    // The suspension carries its question and expiry; no other event does.
    assert_eq!(events[1].pending, suspended.pending());
    assert_eq!(events[1].expires_at, suspended.expires_at());
    assert!(events
        .iter()
        .filter(|e| e.kind != RunEventKind::Suspended)
        .all(|e| e.pending.is_empty() && e.expires_at.is_none()));
    assert_eq!(
        events[1],
        RunEvent {
            position: events[1].position,
            ..RunEvent::of(&suspended, RunEventKind::Suspended)
        }
    );

    // Every tenant's read has them too; another tenant's has none.
    let everyone = store
        .read_run_events(None, events[0].position, 10_000)
        .await
        .expect("read every tenant's");
    assert!(everyone
        .events
        .iter()
        .any(|event| event.position == events[1].position));
    let other = all_events(store, &fresh_tenant("other"), EventPosition::default(), 100).await;
    assert_eq!(other, Vec::new());

    // Nothing comes after the head.
    let head = store.run_events_head().await.expect("head");
    assert!(head >= events[3].position, "{head:?}");
    assert_eq!(all_events(store, &tenant, head, 100).await, Vec::new());
}

async fn a_refused_write_stores_no_event(store: &AnyStore) {
    let tenant = fresh_tenant("refused");
    let run = running_run(&tenant, "assistant");
    store.create_run(&run, &[]).await.expect("create");
    // The same id again, and a stale commit: both refused, neither an event.
    let again = store.create_run(&run, &[]).await;
    assert!(matches!(again, Err(StoreError::AlreadyExists)), "{again:?}");
    let stale = next(&run, suspended_like(&run));
    let refused = store
        .commit(
            &stale,
            run.version() + 7,
            &suspension_events(6),
            &status_events(&stale),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::VersionConflict { .. })),
        "{refused:?}"
    );
    let kinds: Vec<RunEventKind> = all_events(store, &tenant, EventPosition::default(), 100)
        .await
        .iter()
        .map(|event| event.kind)
        .collect();
    assert_eq!(kinds, [RunEventKind::Started]);
}

async fn reads_continue_after_any_position(store: &AnyStore) {
    let tenant = fresh_tenant("paged");
    let runs: Vec<RunRecord> = (0..7).map(|_| running_run(&tenant, "pager")).collect();
    for run in &runs {
        store.create_run(run, &[]).await.expect("create");
    }
    let all = all_events(store, &tenant, EventPosition::default(), 100).await;
    assert_eq!(
        all.iter().map(|e| e.run_id).collect::<Vec<_>>(),
        runs.iter().map(|r| r.id).collect::<Vec<_>>()
    );
    // Pages of 3, each after the last of the previous: the same events.
    assert_eq!(all_events(store, &tenant, EventPosition::default(), 3).await, all);
    for (i, event) in all.iter().enumerate() {
        assert_eq!(all_events(store, &tenant, event.position, 2).await, all[i + 1..]);
    }
}

/// Runs written at once from many tasks: each run's events in the order of
/// its writes, every event once, positions rising.
async fn concurrent_runs_keep_their_own_order(store: &AnyStore) {
    let tenant = fresh_tenant("concurrent");
    let writers = (0..16).map(|_| {
        let (store, tenant) = (store.clone(), tenant.clone());
        tokio::spawn(async move {
            let run = running_run(&tenant, "busy");
            store.create_run(&run, &[]).await.expect("create");
            let suspended = next(&run, suspended_like(&run));
            store
                .commit(&suspended, run.version(), &[], &status_events(&suspended))
                .await
                .expect("suspend");
            let done = next(&suspended, Phase::Expired);
            store
                .commit(&done, suspended.version(), &[], &status_events(&done))
                .await
                .expect("expire");
            run.id
        })
    });
    let mut ids = Vec::new();
    for writer in writers {
        ids.push(writer.await.expect("writer"));
    }
    let events = all_events(store, &tenant, EventPosition::default(), 10).await;
    assert_eq!(events.len(), 3 * ids.len(), "{events:?}");
    assert!(events.windows(2).all(|pair| pair[0].position < pair[1].position));
    for id in ids {
        let kinds: Vec<RunEventKind> = events.iter().filter(|e| e.run_id == id).map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [
                RunEventKind::Started,
                RunEventKind::Suspended,
                RunEventKind::Expired
            ],
            "run {id}"
        );
    }
}

async fn a_thread_takes_its_events_along(store: &AnyStore) {
    let tenant = fresh_tenant("thread-events");
    let thread = ThreadId::new("with-events").expect("a thread id");
    let mut run = running_run(&tenant, "assistant");
    run.thread = Some(ThreadLink {
        id: thread.clone(),
        previous: None,
    });
    store.create_run(&run, &[]).await.expect("create");
    let alone = running_run(&tenant, "assistant");
    store.create_run(&alone, &[]).await.expect("create");
    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].thread_id, Some(thread.clone()));

    store.delete_thread(&tenant, &thread).await.expect("delete");
    let left = all_events(store, &tenant, EventPosition::default(), 100).await;
    assert_eq!(left.iter().map(|e| e.run_id).collect::<Vec<_>>(), [alone.id]);
    // A position of a deleted event still continues where it was.
    assert_eq!(all_events(store, &tenant, events[0].position, 100).await, left);
}
