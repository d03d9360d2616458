//! A2A push notification configurations in the store, and the deliveries
//! of one event to several targets: a configuration is put (replacing one
//! of the same id), read back by run in id order, deleted once; the
//! ledger holds one delivery per event and target and keeps each target's
//! order on its own.

use agentd::domain::{EventPosition, RunId, Tenant, Timestamp};
use agentd::store::{AttemptOutcome, Claim, Enqueue, NewDelivery, PushConfig};

use super::deliveries::three_events;
use super::run_events::{all_events, fresh_tenant};
use super::AnyStore;

pub(super) async fn push_configs_conform(store: &AnyStore) {
    configs_are_put_read_and_deleted_per_run(store).await;
    one_event_goes_to_each_target_in_order(store).await;
}

fn config(run_id: RunId, tenant: &Tenant, id: &str, url: &str) -> PushConfig {
    PushConfig {
        run_id,
        id: id.to_owned(),
        tenant: tenant.clone(),
        url: url.to_owned(),
        token: format!("token-{id}"),
        auth_scheme: "Bearer".into(),
        auth_credentials: "secret".into(),
        created_at: Timestamp(1_764_000_000_000_000),
    }
}

async fn configs_are_put_read_and_deleted_per_run(store: &AnyStore) {
    let tenant = fresh_tenant("push");
    let run = three_events(store, &tenant).await;
    let other = three_events(store, &tenant).await;
    assert_eq!(store.push_configs(&[run.id]).await.expect("none yet"), Vec::new());
    let b = config(run.id, &tenant, "b", "https://example.com/b");
    let a = config(run.id, &tenant, "a", "https://example.com/a");
    store.put_push_config(&b).await.expect("put b");
    store.put_push_config(&a).await.expect("put a");
    store
        .put_push_config(&config(other.id, &tenant, "a", "https://example.com/other"))
        .await
        .expect("put the other run's");
    assert_eq!(
        store.push_configs(&[run.id]).await.expect("read"),
        vec![a.clone(), b.clone()]
    );
    // The same id again replaces it.
    let moved = PushConfig {
        url: "https://example.com/moved".into(),
        token: String::new(),
        auth_scheme: String::new(),
        auth_credentials: String::new(),
        ..b.clone()
    };
    store.put_push_config(&moved).await.expect("replace b");
    assert_eq!(
        store.push_configs(&[run.id]).await.expect("read"),
        vec![a.clone(), moved]
    );
    assert!(store.delete_push_config(run.id, "b").await.expect("delete"));
    assert!(!store.delete_push_config(run.id, "b").await.expect("delete again"));
    assert!(!store
        .delete_push_config(run.id, "zzz")
        .await
        .expect("delete unknown"));
    assert_eq!(
        store.push_configs(&[run.id]).await.expect("read"),
        vec![a.clone()]
    );
    let others = store.push_configs(&[other.id]).await.expect("read other");
    assert_eq!(others.len(), 1);
    // Several runs at once (repeats and unknown runs included): by run, then id.
    let mut both = vec![a, others[0].clone()];
    both.sort_by(|x, y| (x.run_id, &x.id).cmp(&(y.run_id, &y.id)));
    assert_eq!(
        store
            .push_configs(&[other.id, RunId::new(), run.id, other.id])
            .await
            .expect("read both"),
        both
    );
    assert_eq!(
        store.push_configs(&[RunId::new()]).await.expect("unknown run"),
        Vec::new()
    );
}

async fn one_event_goes_to_each_target_in_order(store: &AnyStore) {
    let tenant = fresh_tenant("targets");
    three_events(store, &tenant).await;
    let events = all_events(store, &tenant, EventPosition::default(), 100).await;
    let ledger = format!("a2a:push-test-{}", RunId::new().0.simple());
    let start = store
        .ledger_cursor(&ledger, EventPosition::default())
        .await
        .expect("cursor");
    let deliveries: Vec<NewDelivery> = events
        .iter()
        .flat_map(|event| {
            ["one", "two"].map(|target| NewDelivery {
                run_id: event.run_id,
                event: event.position,
                target: target.to_owned(),
            })
        })
        .collect();
    let now = Timestamp::now();
    let last = events.last().expect("events").position;
    assert!(store
        .enqueue_deliveries(
            &ledger,
            &Enqueue {
                from: start,
                to: last,
                deliveries: &deliveries,
                now
            }
        )
        .await
        .expect("enqueue"));
    assert_eq!(
        store.pending_deliveries().await.expect("pending").get(&ledger),
        Some(&6)
    );
    // Each target's first event is due; their later ones wait.
    let claim = store
        .claim_deliveries(
            &ledger,
            &Claim {
                owner: "replica",
                now,
                lease_until: now.after(std::time::Duration::from_secs(60)),
                limit: 10,
            },
        )
        .await
        .expect("claim");
    let mut claimed: Vec<(String, EventPosition)> = claim
        .deliveries
        .iter()
        .map(|delivery| (delivery.target.clone(), delivery.event.position))
        .collect();
    claimed.sort();
    assert_eq!(
        claimed,
        vec![
            ("one".to_owned(), events[0].position),
            ("two".to_owned(), events[0].position)
        ]
    );
    // One target delivered: its next event is due, the other's still waits.
    let one = claim.deliveries.iter().find(|d| d.target == "one").expect("one");
    assert!(store
        .finish_delivery(one.id, one.attempt, &AttemptOutcome::Delivered, now)
        .await
        .expect("finish"));
    let later = now.after(std::time::Duration::from_secs(120));
    let claim = store
        .claim_deliveries(
            &ledger,
            &Claim {
                owner: "replica",
                now: later,
                lease_until: later.after(std::time::Duration::from_secs(60)),
                limit: 10,
            },
        )
        .await
        .expect("claim again");
    let claimed: Vec<(String, EventPosition)> = claim
        .deliveries
        .iter()
        .map(|delivery| (delivery.target.clone(), delivery.event.position))
        .collect();
    assert!(
        claimed.contains(&("one".to_owned(), events[1].position)),
        "{claimed:?}"
    );
    assert!(
        claimed
            .iter()
            .all(|(target, position)| target == "one" || *position == events[0].position),
        "{claimed:?}"
    );
}
