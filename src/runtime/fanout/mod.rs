//! The fan-out: delivering a run's stored chunks to the clients that follow
//! it, whichever replica executes it. `live.rs` is the registry of the
//! runs live in this process (a broadcast of each one's stored chunks, and
//! the signals that stop its execution here); `stream.rs` the stream a
//! client reads, and the feed an execution hands its own client's chunks
//! to; `subscribe.rs` following a run (replay from the store, then live,
//! with no gap and no duplicate); `feed.rs` the bridge from a shared
//! store's feed of the changes other replicas make.
//!
//! Owns the live-run registry (`Inner::live`). Delivers only what the store
//! has: it is handed chunks once they are stored (by the execution here,
//! by a lifecycle commit, or through the feed) or reads them from the
//! store. It never writes a run (a run it reads past its time to live is
//! expired through the lifecycle's `expire_if_due` first) and holds no run
//! state: the run never waits for a client, and a client that falls behind
//! catches up from the store.
//!
//! Its API to the other parts: `Runtime::follow` and `execution_stream`,
//! and what is re-exported below (the live entries, which the lifecycle
//! and the execution signal).

mod feed;
mod live;
mod stream;
mod subscribe;
mod watch;

pub(super) use live::{Interruption, LiveRun, LiveRuns, Signal};
pub(super) use stream::{ClientFeed, Delivery, Refusal};
pub use stream::{MapEvents, RunStream};
pub(super) use subscribe::Wanted;
pub use watch::{RunEventStream, WatchRuns};
