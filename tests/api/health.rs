//! grpc.health.v1 follows the run store: a server whose SQLite file goes
//! away reports NOT_SERVING (for the whole server and for the agent
//! service), and SERVING again once the file is back; a Watch sees each
//! change as it happens.

use std::sync::Arc;
use std::time::Duration;

use agentd::agent::{AgentRegistry, AgentSpec};
use agentd::runtime::{Runtime, RuntimeConfig};
use agentd::server;
use agentd::store::{SqliteStore, Store};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

const AGENT_SERVICE: &str = "agentd.v1.AgentService";

/// Reads a Watch until it reports `expected` (a server may repeat a
/// status), within a bound.
pub(crate) async fn wait_for(
    watch: &mut tonic::Streaming<tonic_health::pb::HealthCheckResponse>,
    expected: ServingStatus,
) {
    let reported = async {
        loop {
            let response = watch
                .message()
                .await
                .expect("Watch")
                .expect("the watch stays open");
            if ServingStatus::try_from(response.status) == Ok(expected) {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), reported)
        .await
        .unwrap_or_else(|_| panic!("the Watch did not report {expected:?} in time"));
}

async fn check(health: &mut HealthClient<tonic::transport::Channel>, service: &str) -> ServingStatus {
    let response = health
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .expect("Check")
        .into_inner();
    ServingStatus::try_from(response.status).expect("a known status")
}

#[tokio::test(flavor = "multi_thread")]
async fn health_follows_the_run_store_down_and_back_up() {
    let temp = tempfile::tempdir().expect("temp dir");
    let database = temp.path().join("agentd.sqlite3");
    let moved = temp.path().join("agentd.sqlite3.away");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&database).expect("store"));
    let agents = AgentRegistry::from_specs(&[AgentSpec::assistant()]).expect("agents");
    let config = RuntimeConfig {
        health_check_interval: Duration::from_millis(20),
        ..RuntimeConfig::default()
    };
    let runtime = Runtime::new(agents, store, config);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (_stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server::serve(listener, runtime, async {
        let _ = stopped.await;
    }));
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let mut health = HealthClient::new(channel);
    let mut watch = health
        .watch(HealthCheckRequest {
            service: AGENT_SERVICE.into(),
        })
        .await
        .expect("Watch")
        .into_inner();
    wait_for(&mut watch, ServingStatus::Serving).await;
    assert_eq!(check(&mut health, "").await, ServingStatus::Serving);

    // The database file disappears: the next ping cannot open it.
    std::fs::rename(&database, &moved).expect("move the database away");
    wait_for(&mut watch, ServingStatus::NotServing).await;
    assert_eq!(check(&mut health, "").await, ServingStatus::NotServing);
    assert_eq!(check(&mut health, AGENT_SERVICE).await, ServingStatus::NotServing);

    std::fs::rename(&moved, &database).expect("put the database back");
    wait_for(&mut watch, ServingStatus::Serving).await;
    assert_eq!(check(&mut health, "").await, ServingStatus::Serving);
}
