//! The fan-out: delivering a run's stored chunks to the clients that follow it.

mod feed;
mod live;
mod stream;
mod subscribe;

pub(super) use live::{Interruption, LiveRun, LiveRuns, Signal};
pub(super) use stream::{ClientFeed, Delivery, Refusal};
pub use stream::{MapEvents, RunStream};
pub(super) use subscribe::Wanted;
