//! Tenants in the store: every backend keeps a run's tenant, scopes
//! idempotency keys (request ids) per tenant, and lists one tenant's runs
//! when asked to; runs stored before tenants existed belong to the default
//! tenant.

use agentd::domain::{Phase, RunId, RunRecord, RunStatus, Tenant};
use agentd::store::{RunQueries, RunQuery, RunStore, SqliteStore, StoreError};

use super::{status_events, suspended_run, suspension_events, AnyStore};

pub(super) async fn tenants_conform(store: &AnyStore) {
    the_tenant_is_kept(store).await;
    request_ids_are_scoped_per_tenant(store).await;
    listings_filter_by_tenant(store).await;
}

/// A tenant no other test (or earlier suite run) uses.
fn fresh_tenant(label: &str) -> Tenant {
    Tenant::new(&format!("{label}-{}", RunId::new().0.simple())).expect("a tenant id")
}

fn run_of(tenant: &Tenant, agent: &str) -> RunRecord {
    let mut run = suspended_run(agent);
    run.tenant = tenant.clone();
    run
}

async fn the_tenant_is_kept(store: &AnyStore) {
    let tenant = fresh_tenant("kept");
    let run = run_of(&tenant, "assistant");
    store
        .create_run(&run, &suspension_events(1))
        .await
        .expect("create");
    assert_eq!(store.load_run(run.id).await.expect("load").tenant, tenant);
    let moved = super::edited(&run, |run| {
        run.version += 1;
        run.phase = Phase::Completed {
            final_text: "done".into(),
        };
    });
    store
        .commit(&moved, run.version(), &[], &status_events(&moved))
        .await
        .expect("commit");
    assert_eq!(store.load_run(run.id).await.expect("load"), moved);
}

async fn request_ids_are_scoped_per_tenant(store: &AnyStore) {
    let (acme, globex) = (fresh_tenant("acme"), fresh_tenant("globex"));
    let key = format!("order-{}", RunId::new());
    let mut first = run_of(&acme, "assistant");
    first.request_id = Some(key.clone());
    let mut second = run_of(&globex, "assistant");
    second.request_id = Some(key.clone());
    store.create_run(&first, &[]).await.expect("acme's run");
    store
        .create_run(&second, &[])
        .await
        .expect("the same key, another tenant");
    assert_eq!(
        store.find_run_by_request_id(&acme, &key).await.expect("find"),
        Some(first.id)
    );
    assert_eq!(
        store.find_run_by_request_id(&globex, &key).await.expect("find"),
        Some(second.id)
    );
    let stranger = fresh_tenant("initech");
    assert_eq!(
        store.find_run_by_request_id(&stranger, &key).await.expect("find"),
        None
    );

    let mut again = run_of(&acme, "assistant");
    again.request_id = Some(key);
    let refused = store.create_run(&again, &[]).await;
    assert!(matches!(refused, Err(StoreError::AlreadyExists)), "{refused:?}");
}

async fn listings_filter_by_tenant(store: &AnyStore) {
    let (acme, globex) = (fresh_tenant("acme"), fresh_tenant("globex"));
    let agent = format!("agent-{}", RunId::new());
    let mut mine = Vec::new();
    for index in 0..3 {
        let run = run_of(&acme, &agent);
        store.create_run(&run, &[]).await.expect("create");
        mine.push(run);
        store
            .create_run(&run_of(&globex, &agent), &[])
            .await
            .expect("create");
        if index == 0 {
            let done = super::edited(&mine[0], |run| {
                run.version += 1;
                run.phase = Phase::Completed {
                    final_text: "done".into(),
                };
            });
            store
                .commit(&done, mine[0].version(), &[], &status_events(&done))
                .await
                .expect("commit");
            mine[0] = done;
        }
    }
    mine.reverse();
    let query = |status: Option<RunStatus>, agent_id: Option<String>| RunQuery {
        tenant: Some(acme.clone()),
        status,
        agent_id,
        updated_after: None,
        before: None,
        limit: 100,
    };
    let listed = store
        .list_runs(&query(None, Some(agent.clone())))
        .await
        .expect("list");
    assert_eq!(listed, mine);
    let suspended = store
        .list_runs(&query(Some(RunStatus::Suspended), Some(agent.clone())))
        .await
        .expect("list");
    assert_eq!(suspended, mine[..2].to_vec());
    let by_tenant = store.list_runs(&query(None, None)).await.expect("list");
    assert_eq!(by_tenant, mine, "the tenant's runs, all agents");
    let by_status = store
        .list_runs(&query(Some(RunStatus::Completed), None))
        .await
        .expect("list");
    assert_eq!(by_status, mine[2..].to_vec());
    let page = RunQuery {
        before: Some(mine[0].id),
        limit: 1,
        ..query(None, Some(agent.clone()))
    };
    assert_eq!(store.list_runs(&page).await.expect("list"), vec![mine[1].clone()]);
}

/// A database written before tenants existed: on open it is migrated, and
/// its runs belong to the default tenant (key lookups and listings too).
#[tokio::test]
async fn runs_stored_before_tenants_belong_to_the_default_tenant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("old.sqlite3");
    let mut old = suspended_run("assistant");
    old.tenant = Tenant::default();
    {
        let conn = rusqlite::Connection::open(&path).expect("open");
        for sql in [
            include_str!("../../../crates/agentd-store/src/sqlite/migrations/0001_runs.sql"),
            include_str!("../../../crates/agentd-store/src/sqlite/migrations/0002_run_queries.sql"),
            include_str!("../../../crates/agentd-store/src/sqlite/migrations/0003_leases.sql"),
        ] {
            conn.execute_batch(sql).expect("an old migration");
        }
        conn.pragma_update(None, "user_version", 3)
            .expect("schema version");
        // The record as it was stored then: without a tenant.
        let mut record = super::layout1(&old);
        record.as_object_mut().expect("an object").remove("tenant");
        conn.execute(
            "INSERT INTO runs (id, agent_id, status, version, last_seq, created_at, updated_at, \
             expires_at, request_id, record) VALUES (?1, ?2, 'suspended', ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![
                old.id.to_string(),
                old.agent_id,
                old.version() as i64,
                old.last_seq() as i64,
                old.created_at.0,
                old.updated_at.0,
                old.expires_at().map(|at| at.0),
                old.request_id,
                serde_json::to_vec(&record).expect("bytes"),
            ],
        )
        .expect("an old row");
    }
    let store = SqliteStore::open(&path).expect("open and migrate");
    let loaded = store.load_run(old.id).await.expect("load");
    assert_eq!(loaded.tenant, Tenant::default());
    assert_eq!(loaded, old);
    let key = old.request_id.clone().expect("a request id");
    assert_eq!(
        store
            .find_run_by_request_id(&Tenant::default(), &key)
            .await
            .expect("find"),
        Some(old.id)
    );
    let listed = store
        .list_runs(&RunQuery {
            tenant: Some(Tenant::default()),
            limit: 10,
            ..RunQuery::default()
        })
        .await
        .expect("list");
    assert_eq!(listed, vec![old]);
}
