//! Conformance of the run store's queries: lookup by request id, filtered
//! keyset listing, due suspensions, counts by status, the health ping.
//! Part of [`super::conformance`]: every test uses its own fresh agent ids
//! (and expiry times earlier than any a previous suite run used), so it
//! holds on a store that already has data.

use agentd::domain::{Phase, RunId, RunRecord, RunStatus, Timestamp};
use agentd::store::RunQuery;

use super::{completed_from, resumption_events, status_events, suspended_run, suspension_events, AnyStore};

/// The query suite, called by [`super::conformance`].
pub(super) async fn queries_conform(store: &AnyStore) {
    request_id_finds_its_run(store).await;
    listing_filters_newest_first(store).await;
    listing_pages_without_gaps_or_repeats(store).await;
    updated_after_filters_every_page_and_counts_count_them_all(store).await;
    due_suspensions_soonest_first(store).await;
    counts_by_status_and_agent(store).await;
}

/// An agent id no other test (or earlier suite run) uses.
fn fresh_agent(label: &str) -> String {
    format!("{label}-{}", RunId::new())
}

async fn create(store: &AnyStore, run: &RunRecord) {
    store
        .create_run(run, &suspension_events(1))
        .await
        .expect("create");
}

/// Creates a suspended run of `agent` and returns it as stored.
async fn suspended(store: &AnyStore, agent: &str) -> RunRecord {
    let run = suspended_run(agent);
    create(store, &run).await;
    run
}

/// Creates a run of `agent` and completes it; returns it as stored.
async fn completed(store: &AnyStore, agent: &str) -> RunRecord {
    let run = suspended(store, agent).await;
    let done = completed_from(&run, "Pro");
    store
        .commit(
            &done,
            run.version(),
            &resumption_events(run.last_seq() + 1, "Pro"),
            &status_events(&done),
        )
        .await
        .expect("complete");
    done
}

async fn list(store: &AnyStore, query: RunQuery) -> Vec<RunRecord> {
    let runs = store.list_runs(&query).await.expect("list_runs");
    assert!(runs.len() <= query.limit, "{query:?}: limit not respected");
    assert!(
        runs.windows(2).all(|pair| pair[0].id > pair[1].id),
        "{query:?}: not strictly newest first"
    );
    runs
}

fn query(status: Option<RunStatus>, agent: Option<&str>, limit: usize) -> RunQuery {
    RunQuery {
        tenant: None,
        status,
        agent_id: agent.map(str::to_owned),
        updated_after: None,
        before: None,
        limit,
    }
}

fn newest_first(mut runs: Vec<RunRecord>) -> Vec<RunRecord> {
    runs.sort_by_key(|run| std::cmp::Reverse(run.id));
    runs
}

async fn request_id_finds_its_run(store: &AnyStore) {
    let run = suspended(store, "assistant").await;
    let key = run.request_id.clone().expect("the fixture has a request id");
    let tenant = &run.tenant;
    assert_eq!(
        store.find_run_by_request_id(tenant, &key).await.expect("find"),
        Some(run.id)
    );

    // Still found once the run has moved on.
    let done = completed_from(&run, "Pro");
    store
        .commit(
            &done,
            run.version(),
            &resumption_events(run.last_seq() + 1, "Pro"),
            &status_events(&done),
        )
        .await
        .expect("commit");
    assert_eq!(
        store.find_run_by_request_id(tenant, &key).await.expect("find"),
        Some(run.id)
    );

    for unknown in [format!("req-{}", RunId::new()), String::new(), format!("{key} ")] {
        assert_eq!(
            store
                .find_run_by_request_id(tenant, &unknown)
                .await
                .expect("find"),
            None,
            "request id {unknown:?}"
        );
    }
}

async fn listing_filters_newest_first(store: &AnyStore) {
    let agent = fresh_agent("list");
    let neighbour = fresh_agent("neighbour");
    let mut mine = Vec::new();
    for i in 0..6 {
        mine.push(if i % 3 == 1 {
            completed(store, &agent).await
        } else {
            suspended(store, &agent).await
        });
        suspended(store, &neighbour).await;
    }
    let with_status =
        |status: RunStatus| newest_first(mine.iter().filter(|r| r.status() == status).cloned().collect());

    // Agent filter: every run of the agent, whole, newest first.
    let all_mine = list(store, query(None, Some(&agent), 100)).await;
    assert_eq!(all_mine, newest_first(mine.clone()));
    // Creation order is id order.
    let ids: Vec<RunId> = all_mine.iter().map(|r| r.id).collect();
    let created: Vec<RunId> = mine.iter().rev().map(|r| r.id).collect();
    assert_eq!(ids, created, "newest first is the reverse creation order");

    // Status and agent together.
    for status in [RunStatus::Suspended, RunStatus::Completed] {
        let got = list(store, query(Some(status), Some(&agent), 100)).await;
        assert_eq!(got, with_status(status), "{status} runs of the agent");
    }
    let got = list(store, query(Some(RunStatus::Expired), Some(&agent), 100)).await;
    assert_eq!(got, Vec::new(), "no expired run of the agent");

    // Status alone: only that status, every one of ours among them.
    let completed_anywhere = list(store, query(Some(RunStatus::Completed), None, 10_000)).await;
    assert!(completed_anywhere
        .iter()
        .all(|r| r.status() == RunStatus::Completed));
    for run in with_status(RunStatus::Completed) {
        assert!(completed_anywhere.contains(&run), "{} missing", run.id);
    }

    // No filter: the newest runs of the store; ours were created last.
    let newest = list(store, query(None, None, 3)).await;
    assert_eq!(newest.len(), 3);
    let oldest_listed = newest[2].id;
    for run in mine.iter().filter(|r| r.id > oldest_listed) {
        assert!(
            newest.contains(run),
            "{} is newer than the page yet missing",
            run.id
        );
    }

    // Limits, and a `before` that is not a stored run.
    assert_eq!(list(store, query(None, Some(&agent), 0)).await, Vec::new());
    let two = list(store, query(None, Some(&agent), 2)).await;
    assert_eq!(two, all_mine[..2].to_vec());
    let later = RunQuery {
        before: Some(RunId::new()),
        ..query(None, Some(&agent), 100)
    };
    assert_eq!(list(store, later).await, all_mine);
    let none = query(None, Some(&fresh_agent("nobody")), 100);
    assert_eq!(list(store, none).await, Vec::new());
}

/// `updated_after` keeps the runs changed after it, page by page; a count
/// counts every page of what the filters keep.
async fn updated_after_filters_every_page_and_counts_count_them_all(store: &AnyStore) {
    let agent = fresh_agent("changed");
    let mut runs = Vec::new();
    for i in 0..6 {
        runs.push(if i % 2 == 0 {
            completed(store, &agent).await
        } else {
            suspended(store, &agent).await
        });
    }
    let all = query(None, Some(&agent), 100);
    assert_eq!(store.count_runs(&all).await.expect("count"), 6);
    let suspended_only = query(Some(RunStatus::Suspended), Some(&agent), 1);
    assert_eq!(store.count_runs(&suspended_only).await.expect("count"), 3);
    // Changed after the third run's last change: its own completion and
    // the earlier runs' changes are not after it, the fifth run's is.
    let cutoff = runs[2].updated_at;
    let expected = newest_first(runs.iter().filter(|r| r.updated_at > cutoff).cloned().collect());
    assert!(!expected.is_empty() && expected.len() < 6, "{expected:?}");
    let changed = RunQuery {
        updated_after: Some(cutoff),
        limit: 2,
        ..all.clone()
    };
    let mut paged = Vec::new();
    let mut last = None;
    loop {
        let page = page_after(store, &changed, last).await;
        if page.is_empty() {
            break;
        }
        assert!(page.iter().all(|r| r.updated_at > cutoff), "{page:?}");
        last = page.last().map(|r| r.id);
        paged.extend(page);
    }
    assert_eq!(paged, expected);
    let counted = RunQuery {
        before: last,
        ..changed
    };
    assert_eq!(
        store.count_runs(&counted).await.expect("count"),
        expected.len() as u64,
        "a count leaves the page bound out"
    );
    let none = RunQuery {
        updated_after: Some(Timestamp(i64::MAX - 1)),
        ..all
    };
    assert_eq!(store.count_runs(&none).await.expect("count"), 0);
    assert_eq!(list(store, none).await, Vec::new());
}

/// Reads the next page of `query` after `last` (the previous page's last id).
async fn page_after(store: &AnyStore, query: &RunQuery, last: Option<RunId>) -> Vec<RunRecord> {
    let page = RunQuery {
        before: last,
        ..query.clone()
    };
    list(store, page).await
}

async fn listing_pages_without_gaps_or_repeats(store: &AnyStore) {
    for status in [None, Some(RunStatus::Suspended)] {
        let agent = fresh_agent("pages");
        let mut before_first_page = Vec::new();
        for i in 0..7 {
            before_first_page.push(if i % 4 == 3 {
                completed(store, &agent).await
            } else {
                suspended(store, &agent).await
            });
        }
        let expected = newest_first(
            before_first_page
                .into_iter()
                .filter(|r| status.is_none_or(|s| r.status() == s))
                .collect(),
        );

        let query = query(status, Some(&agent), 2);
        let mut seen: Vec<RunRecord> = Vec::new();
        let mut last = None;
        loop {
            let page = page_after(store, &query, last).await;
            // Runs started between page reads are newer than every page
            // after the first: they must not shift or repeat older runs.
            suspended(store, &agent).await;
            completed(store, &agent).await;
            let Some(tail) = page.last() else { break };
            last = Some(tail.id);
            assert!(page.len() <= 2);
            seen.extend(page);
        }
        assert_eq!(seen, expected, "pages of status {status:?}");
    }
}

/// `count_runs_by_agent` counts the runs in one status, per agent, and
/// `ping` answers.
async fn counts_by_status_and_agent(store: &AnyStore) {
    let (one, two) = (fresh_agent("count-a"), fresh_agent("count-b"));
    suspended(store, &one).await;
    suspended(store, &one).await;
    suspended(store, &two).await;
    completed(store, &two).await;
    let ours = |counts: std::collections::BTreeMap<String, u64>| {
        counts
            .into_iter()
            .filter(|(agent, _)| *agent == one || *agent == two)
            .collect::<Vec<_>>()
    };
    let suspended_now = store
        .count_runs_by_agent(RunStatus::Suspended)
        .await
        .expect("count");
    assert_eq!(ours(suspended_now), [(one.clone(), 2), (two.clone(), 1)]);
    let completed_now = store
        .count_runs_by_agent(RunStatus::Completed)
        .await
        .expect("count");
    assert_eq!(ours(completed_now), [(two.clone(), 1)]);
    store.ping().await.expect("ping");
}

async fn due_suspensions_soonest_first(store: &AnyStore) {
    // Each suite run picks a moment earlier than any earlier run picked, so
    // suspensions left over by earlier runs are never due at it.
    let base = Timestamp(-Timestamp::now().0);
    let at = |offset: i64| Timestamp(base.0 + offset);
    let agent = fresh_agent("due");

    let mut due = Vec::new();
    for offset in [40, 10, 30, 20] {
        let mut run = suspended_run(&agent);
        super::expire_at(&mut run, at(offset));
        create(store, &run).await;
        due.push((offset, run));
    }
    due.sort_by_key(|(offset, _)| *offset);
    let ids = |offsets: &[i64]| -> Vec<RunId> {
        offsets
            .iter()
            .map(|o| due.iter().find(|(offset, _)| offset == o).expect("offset").1.id)
            .collect()
    };

    // Not due: suspended until later, or no longer suspended.
    let mut later = suspended_run(&agent);
    super::expire_at(&mut later, at(100));
    create(store, &later).await;
    let mut finished = completed(store, &agent).await;
    let previous = finished.version();
    finished = super::edited(&finished, |run| run.version += 1);
    store
        .commit(&finished, previous, &[], &status_events(&finished))
        .await
        .expect("commit a completed run");

    let due_at = |now: i64, limit: usize| async move {
        let got = store
            .due_suspensions(at(now), limit)
            .await
            .expect("due_suspensions");
        assert!(got.len() <= limit, "limit {limit} not respected");
        got
    };
    assert_eq!(due_at(40, 100).await, ids(&[10, 20, 30, 40]));
    assert_eq!(due_at(99, 2).await, ids(&[10, 20]));
    assert_eq!(due_at(20, 100).await, ids(&[10, 20]), "expires_at == now is due");
    assert_eq!(due_at(19, 100).await, ids(&[10]));
    assert_eq!(due_at(9, 100).await, Vec::new());
    assert_eq!(due_at(40, 0).await, Vec::new());

    // Once expired (by whoever wins the compare-and-set) it is no longer due.
    let (_, first) = &due[0];
    let expired = super::edited(first, |run| {
        run.version += 1;
        run.phase = Phase::Expired;
    });
    store
        .commit(&expired, first.version(), &[], &status_events(&expired))
        .await
        .expect("expire");
    assert_eq!(
        due_at(100, 100).await,
        ids(&[20, 30, 40])
            .into_iter()
            .chain([later.id])
            .collect::<Vec<_>>()
    );
}
