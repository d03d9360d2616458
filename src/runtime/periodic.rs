//! The runtime's periodic chores (the expiry and retention sweep, the
//! takeover of runs whose lease expired): one task each, ticking at a fixed
//! interval, that ends by itself once every handle of the runtime is gone.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

use super::{Inner, Runtime};

/// Spawns a task that calls `chore` every `interval`, the first time at
/// once; a late tick is delayed rather than bunched up. A zero interval
/// disables the chore: the task ends at once. The task holds the runtime
/// only while a chore runs, and ends once every handle of it is dropped.
pub(super) fn spawn_periodic<F, Fut>(inner: &Arc<Inner>, interval: Duration, mut chore: F) -> JoinHandle<()>
where
    F: FnMut(Runtime) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let inner: Weak<Inner> = Arc::downgrade(inner);
    tokio::spawn(async move {
        if interval.is_zero() {
            return;
        }
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(inner) = inner.upgrade() else { return };
            chore(Runtime { inner }).await;
        }
    })
}
