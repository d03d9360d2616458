//! Draining shutdown. When the shutdown signal comes: health turns
//! NOT_SERVING (so load balancers stop sending), new streams are refused
//! with UNAVAILABLE (so clients retry elsewhere), and the streams already
//! open, and runs executing here, get the drain period to finish. Then the
//! runtime is fenced (it changes no run any more: a run still executing is
//! left in the store as RUNNING, for a restart or another replica to take
//! over), the remaining streams end with UNAVAILABLE, and the server stops
//! accepting connections. Connections get a short grace to close.

use std::future::Future;
use std::time::Duration;

use tokio::sync::oneshot;
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use super::{health, AbortOnDrop};
use crate::door::StreamGate;
use crate::runtime::Runtime;

/// How long connections get to close once the streams have been ended.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How often the drain looks whether runs still execute here.
const POLL: Duration = Duration::from_millis(25);

/// What the drain acts on.
pub(super) struct Draining {
    pub gate: StreamGate,
    pub runtime: Runtime,
    pub health: HealthReporter,
    pub store_watch: AbortOnDrop,
    pub period: Duration,
}

impl Draining {
    /// Waits for `shutdown`, drains, and resolves when the server must stop
    /// accepting; `closed` is told then.
    pub(super) async fn run(self, shutdown: impl Future<Output = ()>, closed: oneshot::Sender<()>) {
        let Draining {
            gate,
            runtime,
            health,
            mut store_watch,
            period,
        } = self;
        shutdown.await;
        tracing::info!(
            ?period,
            open_streams = gate.open_streams(),
            executing_runs = runtime.executing_runs(),
            "shutting down: NOT_SERVING; new streams are refused; open streams may finish"
        );
        // Stopped (and waited for) first, so that it cannot report SERVING
        // again.
        store_watch.0.abort();
        let _ = (&mut store_watch.0).await;
        health::report(&health, ServingStatus::NotServing).await;
        gate.drain();

        let quiet = async {
            gate.idle().await;
            while runtime.executing_runs() > 0 {
                tokio::time::sleep(POLL).await;
            }
        };
        if tokio::time::timeout(period, quiet).await.is_err() {
            tracing::warn!(
                open_streams = gate.open_streams(),
                executing_runs = runtime.executing_runs(),
                "drain period over: closing the remaining streams; runs still executing stay \
                 stored as running, for a restart or another replica to take over"
            );
        }
        runtime.fence();
        gate.close();
        let _ = closed.send(());
    }
}

/// Runs `serving` until it ends, or until [`CLOSE_GRACE`] after the drain
/// closed the streams (a connection that stays open, such as a health
/// watch, does not hold the shutdown up).
pub(super) async fn bounded<T>(serving: impl Future<Output = T>, closed: oneshot::Receiver<()>) -> Option<T> {
    let grace_over = async {
        match closed.await {
            Ok(()) => tokio::time::sleep(CLOSE_GRACE).await,
            // The drain never ran: only `serving` can end.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        result = serving => Some(result),
        () = grace_over => {
            tracing::warn!("connections still open after the drain: closing them");
            None
        }
    }
}
