//! The webhook delivery ledger in the store: a webhook's cursor starts
//! where it is first seen and moves only by compare-and-set with the
//! deliveries it enqueues; a claim leases each due delivery to one caller
//! (across concurrent claimers too), a run's later event waits for its
//! earlier one to be finished, an outcome counts only for the attempt that
//! holds the delivery, and deliveries go with their thread.

use std::collections::BTreeSet;

use agentd::domain::{
    EventPosition, Phase, RunEvent, RunEventKind, RunRecord, Tenant, ThreadId, ThreadLink, Timestamp,
};
use agentd::store::{AttemptOutcome, Claim, Enqueue, NewDelivery};

use super::run_events::{all_events, fresh_tenant, next, running_run, suspended_like};
use super::{status_events, AnyStore};

pub(super) async fn deliveries_conform(store: &AnyStore) {
    a_cursor_starts_where_it_is_first_seen(store).await;
    enqueueing_moves_the_cursor_once(store).await;
    a_claim_leases_each_delivery_for_one_attempt(store).await;
    a_run_s_events_are_delivered_in_order(store).await;
    concurrent_claims_take_each_delivery_once(store).await;
    a_thread_takes_its_deliveries_along(store).await;
}

fn webhook(label: &str) -> String {
    format!("{label}-{}", agentd::domain::RunId::new().0.simple())
}

/// A run of `tenant` started, suspended and expired: three events.
pub(super) async fn three_events(store: &AnyStore, tenant: &Tenant) -> RunRecord {
    let run = running_run(tenant, "assistant");
    store.create_run(&run, &[]).await.expect("create");
    let suspended = next(&run, suspended_like(&run));
    store
        .commit(&suspended, run.version(), &[], &status_events(&suspended))
        .await
        .expect("suspend");
    let expired = next(&suspended, Phase::Expired);
    store
        .commit(&expired, suspended.version(), &[], &status_events(&expired))
        .await
        .expect("expire");
    expired
}

fn deliveries(events: &[RunEvent]) -> Vec<NewDelivery> {
    events
        .iter()
        .map(|event| NewDelivery {
            target: String::new(),
            run_id: event.run_id,
            event: event.position,
        })
        .collect()
}

/// Enqueues `events` for a new webhook, its cursor from the start.
async fn enqueued(store: &AnyStore, label: &str, events: &[RunEvent], now: Timestamp) -> String {
    let webhook = webhook(label);
    let start = store
        .ledger_cursor(&webhook, EventPosition::default())
        .await
        .expect("cursor");
    let last = events.last().expect("events").position;
    let moved = store
        .enqueue_deliveries(
            &webhook,
            &Enqueue {
                from: start,
                to: last,
                deliveries: &deliveries(events),
                now,
            },
        )
        .await
        .expect("enqueue");
    assert!(moved);
    webhook
}

async fn a_cursor_starts_where_it_is_first_seen(store: &AnyStore) {
    let webhook = webhook("cursor");
    let start = EventPosition { major: 3, minor: 9 };
    assert_eq!(store.ledger_cursor(&webhook, start).await.expect("first"), start);
    let later = EventPosition { major: 4, minor: 1 };
    assert_eq!(
        store.ledger_cursor(&webhook, later).await.expect("again"),
        start,
        "the stored cursor stays"
    );
}

async fn enqueueing_moves_the_cursor_once(store: &AnyStore) {
    let tenant = fresh_tenant("enqueue");
    three_events(store, &tenant).await;
    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    let webhook = webhook("enqueue");
    let start = store
        .ledger_cursor(&webhook, EventPosition::default())
        .await
        .expect("cursor");
    let now = Timestamp::now();
    let to = events[2].position;
    let first = store
        .enqueue_deliveries(
            &webhook,
            &Enqueue {
                from: start,
                to,
                deliveries: &deliveries(&events),
                now,
            },
        )
        .await
        .expect("enqueue");
    assert!(first, "the cursor was where the caller read it");
    // A second replica that read the same cursor enqueues nothing.
    let second = store
        .enqueue_deliveries(
            &webhook,
            &Enqueue {
                from: start,
                to,
                deliveries: &deliveries(&events),
                now,
            },
        )
        .await
        .expect("enqueue again");
    assert!(!second, "the cursor moved");
    assert_eq!(store.ledger_cursor(&webhook, start).await.expect("cursor"), to);
    let pending = store.pending_deliveries().await.expect("pending");
    assert_eq!(pending.get(&webhook), Some(&3), "{pending:?}");
    // Moving on without deliveries (events the webhook does not want).
    let further = EventPosition {
        major: to.major,
        minor: to.minor + 1,
    };
    assert!(store
        .enqueue_deliveries(
            &webhook,
            &Enqueue {
                from: to,
                to: further,
                deliveries: &[],
                now
            }
        )
        .await
        .expect("skip"));
    assert_eq!(
        store.ledger_cursor(&webhook, start).await.expect("cursor"),
        further
    );
}

async fn a_claim_leases_each_delivery_for_one_attempt(store: &AnyStore) {
    let tenant = fresh_tenant("claim");
    let run = running_run(&tenant, "assistant");
    store.create_run(&run, &[]).await.expect("create");
    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    let now = Timestamp::now();
    let webhook = enqueued(store, "claim", &events, now).await;

    let lease = now.after(std::time::Duration::from_secs(30));
    let claim = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "replica-a",
                now,
                lease_until: lease,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    assert_eq!(claim.deliveries.len(), 1);
    let delivery = &claim.deliveries[0];
    assert_eq!(delivery.attempt, 1);
    assert_eq!(delivery.event, events[0]);
    assert_eq!(delivery.enqueued_at, now);
    assert_eq!(claim.next_due, Some(lease), "due again when the lease runs out");

    // Leased: nobody else gets it until the lease expires.
    let other = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "replica-b",
                now,
                lease_until: lease,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    assert!(other.deliveries.is_empty(), "{other:?}");

    // The lease expired: a second attempt, and the first one's outcome no
    // longer counts.
    let retaken = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "replica-b",
                now: lease,
                lease_until: lease.after(std::time::Duration::from_secs(30)),
                limit: 10,
            },
        )
        .await
        .expect("claim after the lease");
    assert_eq!(retaken.deliveries.len(), 1);
    assert_eq!(retaken.deliveries[0].attempt, 2);
    let stale = store
        .finish_delivery(delivery.id, 1, &AttemptOutcome::Delivered, lease)
        .await
        .expect("finish");
    assert!(!stale, "the first attempt no longer holds the delivery");

    // A retry frees the lease and is due at its time.
    let at = lease.after(std::time::Duration::from_secs(5));
    let retry = AttemptOutcome::Retry {
        at,
        error: "HTTP 503".into(),
    };
    assert!(store
        .finish_delivery(delivery.id, 2, &retry, lease)
        .await
        .expect("finish"));
    let early = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "replica-a",
                now: lease,
                lease_until: at,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    assert!(early.deliveries.is_empty());
    assert_eq!(early.next_due, Some(at));
    let due = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "replica-a",
                now: at,
                lease_until: at.after(std::time::Duration::from_secs(30)),
                limit: 10,
            },
        )
        .await
        .expect("claim");
    assert_eq!(due.deliveries.len(), 1);
    assert_eq!(due.deliveries[0].attempt, 3);
    assert!(store
        .finish_delivery(delivery.id, 3, &AttemptOutcome::Delivered, at)
        .await
        .expect("finish"));
    // Delivered: nothing pending, nothing to claim, and no second outcome.
    assert!(!store
        .finish_delivery(delivery.id, 3, &AttemptOutcome::Delivered, at)
        .await
        .expect("finish"));
    let after = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "replica-a",
                now: at,
                lease_until: at,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    assert!(after.deliveries.is_empty());
    assert_eq!(after.next_due, None);
    let pending = store.pending_deliveries().await.expect("pending");
    assert!(!pending.contains_key(&webhook), "{pending:?}");
}

async fn a_run_s_events_are_delivered_in_order(store: &AnyStore) {
    let tenant = fresh_tenant("order");
    three_events(store, &tenant).await;
    let other = running_run(&tenant, "assistant");
    store.create_run(&other, &[]).await.expect("create");
    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    assert_eq!(events.len(), 4);
    let now = Timestamp::now();
    let webhook = enqueued(store, "order", &events, now).await;
    let lease = now.after(std::time::Duration::from_secs(30));

    // The run's first event, and the other run's: its later ones wait.
    let claim = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "a",
                now,
                lease_until: lease,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    let kinds: Vec<(RunEventKind, bool)> = claim
        .deliveries
        .iter()
        .map(|d| (d.event.kind, d.event.run_id == other.id))
        .collect();
    assert_eq!(
        kinds,
        [(RunEventKind::Started, false), (RunEventKind::Started, true)]
    );
    assert_eq!(claim.next_due, Some(lease), "the waiting ones are not due");

    // A retry of the first keeps the second waiting, past its own time.
    let first = &claim.deliveries[0];
    let at = now.after(std::time::Duration::from_secs(1));
    let retry = AttemptOutcome::Retry {
        at,
        error: "timed out".into(),
    };
    assert!(store
        .finish_delivery(first.id, 1, &retry, now)
        .await
        .expect("finish"));
    let waiting = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "a",
                now,
                lease_until: lease,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    assert!(waiting.deliveries.is_empty(), "{waiting:?}");
    assert_eq!(waiting.next_due, Some(at));

    // Finally failed: the next event of the run goes.
    let failed = AttemptOutcome::Failed {
        error: "HTTP 500".into(),
    };
    let again = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "a",
                now: at,
                lease_until: lease,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    assert_eq!(again.deliveries.len(), 1);
    assert!(store
        .finish_delivery(first.id, 2, &failed, at)
        .await
        .expect("finish"));
    let second = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "a",
                now: at,
                lease_until: lease,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    let kinds: Vec<RunEventKind> = second.deliveries.iter().map(|d| d.event.kind).collect();
    assert_eq!(kinds, [RunEventKind::Suspended]);
    assert!(store
        .finish_delivery(second.deliveries[0].id, 1, &AttemptOutcome::Delivered, at)
        .await
        .expect("finish"));
    let third = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "a",
                now: at,
                lease_until: lease,
                limit: 10,
            },
        )
        .await
        .expect("claim");
    let kinds: Vec<RunEventKind> = third.deliveries.iter().map(|d| d.event.kind).collect();
    assert_eq!(kinds, [RunEventKind::Expired]);
}

/// Many callers claim at once, one delivery each: every delivery is
/// claimed exactly once.
async fn concurrent_claims_take_each_delivery_once(store: &AnyStore) {
    let tenant = fresh_tenant("concurrent-claims");
    for _ in 0..12 {
        let run = running_run(&tenant, "assistant");
        store.create_run(&run, &[]).await.expect("create");
    }
    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    let now = Timestamp::now();
    let webhook = enqueued(store, "concurrent", &events, now).await;
    let lease = now.after(std::time::Duration::from_secs(30));
    let claimers = (0..24).map(|i| {
        let (store, webhook) = (store.clone(), webhook.clone());
        tokio::spawn(async move {
            let owner = format!("claimer-{i}");
            store
                .claim_deliveries(
                    &webhook,
                    &Claim {
                        owner: &owner,
                        now,
                        lease_until: lease,
                        limit: 1,
                    },
                )
                .await
                .expect("claim")
                .deliveries
        })
    });
    let mut claimed = Vec::new();
    for claimer in claimers {
        claimed.extend(claimer.await.expect("claimer"));
    }
    // Claims that found their rows locked skipped them: take the rest.
    loop {
        let more = store
            .claim_deliveries(
                &webhook,
                &Claim {
                    owner: "sweeper",
                    now,
                    lease_until: lease,
                    limit: 100,
                },
            )
            .await
            .expect("claim")
            .deliveries;
        if more.is_empty() {
            break;
        }
        claimed.extend(more);
    }
    let ids: BTreeSet<i64> = claimed.iter().map(|d| d.id).collect();
    assert_eq!(ids.len(), claimed.len(), "a delivery was claimed twice");
    assert_eq!(claimed.len(), events.len());
    assert!(claimed.iter().all(|d| d.attempt == 1));
}

async fn a_thread_takes_its_deliveries_along(store: &AnyStore) {
    let tenant = fresh_tenant("thread-deliveries");
    let thread = ThreadId::new("delivered").expect("a thread id");
    let mut run = running_run(&tenant, "assistant");
    run.thread = Some(ThreadLink {
        id: thread.clone(),
        previous: None,
    });
    store.create_run(&run, &[]).await.expect("create");
    let alone = running_run(&tenant, "assistant");
    store.create_run(&alone, &[]).await.expect("create");
    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    let now = Timestamp::now();
    let webhook = enqueued(store, "thread", &events, now).await;
    store.delete_thread(&tenant, &thread).await.expect("delete");
    let pending = store.pending_deliveries().await.expect("pending");
    assert_eq!(pending.get(&webhook), Some(&1), "{pending:?}");
    let claim = store
        .claim_deliveries(
            &webhook,
            &Claim {
                owner: "a",
                now,
                lease_until: now.after(std::time::Duration::from_secs(30)),
                limit: 10,
            },
        )
        .await
        .expect("claim");
    let runs: Vec<_> = claim.deliveries.iter().map(|d| d.event.run_id).collect();
    assert_eq!(runs, [alone.id]);
}
