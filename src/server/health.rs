//! Health that means something: grpc.health.v1 reports SERVING while the run
//! store answers and accepts writes, and NOT_SERVING while it does not. A
//! background watch probes the store (a write, see `Presence::ping`) every
//! `RuntimeConfig::health_check_interval` (the first time at once), and at
//! once when a write of the runtime is refused, and flips both the whole
//! server (`""`) and `agentd.v1.AgentService` when the answer changes. It
//! never serves requests and never changes a run.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tonic::server::NamedService;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::grpc::AgentServiceImpl;
use crate::pb::agent_service_server::AgentServiceServer;
use crate::runtime::Runtime;

/// A ping that takes longer than this counts as a failure.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a store found down is probed again, whatever the interval.
const DOWN_RECHECK: Duration = Duration::from_secs(1);

/// The services whose status follows the store: the whole server and the
/// agent service.
const WATCHED: [&str; 2] = ["", <AgentServiceServer<AgentServiceImpl> as NamedService>::NAME];

/// Reports `status` for every watched service.
pub(super) async fn report(health: &HealthReporter, status: ServingStatus) {
    for service in WATCHED {
        health.set_service_status(service, status).await;
    }
}

/// Starts the watch, for a server that reports SERVING until told
/// otherwise. With a zero interval there is none: the status stays as it
/// is.
pub(super) fn spawn_store_watch(runtime: Runtime, health: HealthReporter) -> JoinHandle<()> {
    tokio::spawn(async move {
        let every = runtime.health_check_interval();
        if every.is_zero() {
            return;
        }
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut serving = true;
        loop {
            // A refused write is checked at once; a store that refuses the
            // probe is probed again every DOWN_RECHECK at most, so that
            // SERVING comes back soon after it accepts writes again.
            tokio::select! {
                _ = ticks.tick() => {}
                () = runtime.write_refused(), if serving => {}
                () = tokio::time::sleep(DOWN_RECHECK), if !serving => {}
            }
            let reachable = match tokio::time::timeout(PING_TIMEOUT, runtime.check_store()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(error.to_string()),
                Err(_) => Err(format!("no answer within {PING_TIMEOUT:?}")),
            };
            let now_serving = reachable.is_ok();
            if serving != now_serving {
                match &reachable {
                    Ok(()) => tracing::info!("run store reachable and accepting writes again: SERVING"),
                    Err(error) => {
                        tracing::error!(%error, "run store unreachable or refusing writes: NOT_SERVING")
                    }
                }
                let status = if now_serving {
                    ServingStatus::Serving
                } else {
                    ServingStatus::NotServing
                };
                report(&health, status).await;
            }
            serving = now_serving;
        }
    })
}
