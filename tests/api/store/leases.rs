//! Conformance of the run store's lease side: appends to a running run
//! (events, version, last_seq and lease expiry, with the state of the last
//! commit kept) and the search for running runs whose lease expired. Part of
//! [`super::conformance`]; like the rest, it holds on a store that already
//! has data (expiry times are earlier than any a previous suite run used,
//! and results are checked among this test's own runs).

use agentd::domain::{Chunk, Event, Lease, Phase, RunId, RunRecord, Timestamp};
use agentd::store::{Holder, StoreError};

use super::{
    assert_conflict, concat, events_from, events_of, status_events, suspended_run, suspension_events,
    AnyStore,
};

/// The lease suite, called by [`super::conformance`].
pub(super) async fn leases_conform(store: &AnyStore) {
    appends_extend_a_running_run(store).await;
    refused_appends_change_nothing(store).await;
    expired_leases_soonest_first(store).await;
}

/// A run that executes on `owner` until `expires_at`, with 5 events stored.
pub(super) fn running_run(owner: &str, expires_at: Timestamp) -> RunRecord {
    super::edited(&suspended_run("assistant"), |run| {
        run.phase = Phase::Running {
            lease: Lease {
                owner: owner.into(),
                expires_at,
            },
            pending: Vec::new(),
        };
    })
}

fn text_events(first_seq: u64, count: usize) -> Vec<Event> {
    let chunks = (0..count)
        .map(|i| Chunk::TextDelta {
            text: format!("token{i} "),
        })
        .collect();
    events_from(first_seq, chunks)
}

async fn appends_extend_a_running_run(store: &AnyStore) {
    let run = running_run("replica-a", Timestamp(Timestamp::now().0 + 10_000_000));
    let first = suspension_events(1);
    store.create_run(&run, &first).await.expect("create");

    let later = Timestamp(Timestamp::now().0 + 20_000_000);
    let batch = text_events(run.last_seq() + 1, 3);
    store
        .append_events(run.id, run.version(), Some(later), &batch)
        .await
        .expect("append");
    let stored = store.load_run(run.id).await.expect("load");
    let mut expected = run.clone();
    let appended = run.position().after_append(Some(run.last_seq() + 3));
    expected.restore(appended, Some(later));
    assert_eq!(
        stored, expected,
        "version, last_seq and lease moved; the state did not"
    );
    assert_eq!(events_of(store, run.id).await, concat(&first, &batch));

    // A renewal: no events, only the version and the lease move.
    let renewed = Timestamp(later.0 + 1);
    store
        .append_events(run.id, expected.version(), Some(renewed), &[])
        .await
        .expect("renew");
    expected.restore(expected.position().after_append(None), Some(renewed));
    assert_eq!(store.load_run(run.id).await.expect("load"), expected);

    // The step's commit follows the appends, with the version they left.
    let done = super::edited(&expected, |run| {
        run.version += 1;
        run.phase = Phase::Completed {
            final_text: "token0 token1 token2 done".into(),
        };
        run.last_seq += 2;
    });
    let tail = text_events(expected.last_seq() + 1, 2);
    store
        .commit(&done, expected.version(), &tail, &status_events(&done))
        .await
        .expect("commit after appends");
    assert_eq!(store.load_run(run.id).await.expect("load"), done);
    assert_eq!(
        events_of(store, run.id).await,
        concat(&concat(&first, &batch), &tail)
    );
    // Listings see what loads see.
    let listed = store
        .list_runs(&agentd::store::RunQuery {
            before: Some(RunId(uuid::Uuid::from_u128(run.id.0.as_u128() + 1))),
            limit: 1,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(listed, vec![done]);
}

async fn refused_appends_change_nothing(store: &AnyStore) {
    let run = running_run("replica-a", Timestamp(Timestamp::now().0 + 10_000_000));
    let first = suspension_events(1);
    store.create_run(&run, &first).await.expect("create");

    let batch = text_events(run.last_seq() + 1, 2);
    // A writer that lost the run (another replica took it over).
    assert_conflict(
        store.append_events(run.id, run.version() + 1, None, &batch).await,
        run.version() + 1,
        run.version(),
    );
    // An event that repeats a stored seq: refused whole.
    let overlapping = text_events(run.last_seq(), 2);
    let result = store
        .append_events(run.id, run.version(), None, &overlapping)
        .await;
    assert!(
        matches!(result, Err(StoreError::Backend(_))),
        "an append repeating a stored seq must fail, and not as a conflict: {result:?}"
    );
    assert_eq!(store.load_run(run.id).await.expect("load"), run);
    assert_eq!(events_of(store, run.id).await, first);

    let ghost = RunId::new();
    let result = store.append_events(ghost, 1, None, &batch).await;
    assert!(matches!(result, Err(StoreError::NotFound)), "got {result:?}");

    // Two writers with the same version: exactly one wins.
    let (a, b) = tokio::join!(
        store.append_events(run.id, run.version(), None, &batch),
        store.append_events(run.id, run.version(), None, &batch),
    );
    assert!(a.is_ok() != b.is_ok(), "one append wins: {a:?} {b:?}");
    assert_eq!(events_of(store, run.id).await, concat(&first, &batch));
}

async fn expired_leases_soonest_first(store: &AnyStore) {
    // Earlier than any moment a previous suite run picked.
    let base = Timestamp(-Timestamp::now().0);
    let at = |offset: i64| Timestamp(base.0 + offset);

    let mut mine = Vec::new();
    for offset in [30, 10, 20] {
        let run = running_run("replica-gone", at(offset));
        store.create_run(&run, &[]).await.expect("create");
        mine.push((offset, run.id));
    }
    // Stored before leases: it reads back with a vacant one.
    let leaseless = super::edited(&running_run("nobody", at(0)), |run| {
        run.phase = Phase::Running {
            lease: Lease::vacant(),
            pending: Vec::new(),
        };
    });
    store.create_run(&leaseless, &[]).await.expect("create");
    let alive = running_run("replica-alive", at(100));
    store.create_run(&alive, &[]).await.expect("create");
    // Not running: never listed, whatever its lease says.
    let suspended = super::edited(&running_run("replica-gone", at(5)), |run| {
        run.phase = super::suspended_phase(run.created_at);
    });
    store.create_run(&suspended, &[]).await.expect("create");

    let ours: Vec<RunId> = mine
        .iter()
        .map(|(_, id)| *id)
        .chain([leaseless.id, alive.id, suspended.id])
        .collect();
    let expired_at = |now: i64, limit: usize| {
        let ours = ours.clone();
        async move {
            let got = store.orphaned_runs(at(now), limit).await.expect("orphaned_runs");
            assert!(got.len() <= limit, "limit {limit} not respected");
            // None of these owners registered: their leases alone count.
            assert!(
                got.iter().all(|orphan| orphan.holder == Holder::Unknown),
                "{got:?}"
            );
            got.into_iter()
                .map(|orphan| orphan.id)
                .filter(|id| ours.contains(id))
                .collect::<Vec<_>>()
        }
    };
    let id = |offset: i64| mine.iter().find(|(o, _)| *o == offset).expect("offset").1;

    assert_eq!(
        expired_at(30, 10_000).await,
        vec![leaseless.id, id(10), id(20), id(30)],
        "leaseless first, then soonest expired; `now` itself counts"
    );
    assert_eq!(expired_at(15, 10_000).await, vec![leaseless.id, id(10)]);

    // Once taken over (a commit with a fresh lease), it is no longer listed.
    let mut taken = store.load_run(id(10)).await.expect("load");
    let start = taken
        .take_over(
            Lease {
                owner: "replica-b".into(),
                expires_at: at(1_000),
            },
            Timestamp::now(),
        )
        .expect("running");
    let first = taken.stage([start]);
    store
        .commit(
            &taken,
            first.expected_version,
            &first.events,
            &status_events(&taken),
        )
        .await
        .expect("take over");
    assert_eq!(expired_at(30, 10_000).await, vec![leaseless.id, id(20), id(30)]);
    // A renewal pushes the expiry out too.
    let run = store.load_run(id(20)).await.expect("load");
    store
        .append_events(run.id, run.version(), Some(at(1_000)), &[])
        .await
        .expect("renew");
    assert_eq!(expired_at(30, 10_000).await, vec![leaseless.id, id(30)]);
}
