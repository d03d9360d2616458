//! The lifecycle of a run: the transitions clients and sweeps ask for.
//! Start (`start.rs`; on a thread, `thread_turn.rs` decides whether it is
//! the thread's next run or answers the question its latest run waits on,
//! with `auto_answer.rs`), Resume (`resume.rs`), CancelRun (`cancel.rs`,
//! and `cancel_remote.rs` when another replica executes the run), expiry
//! (`expiry.rs`: lazy, and the sweep), the takeover of runs whose holder is
//! gone (`recovery.rs`), and DeleteThread with the retention sweep
//! (`retention.rs`).
//!
//! Each transition is decided and stored here; the state change itself is
//! a method of the domain's [`RunRecord`](crate::domain::RunRecord)
//! (`answer`, `take_over`, `cancel`, `expire`, ...) that returns the chunks
//! that say so. Each transition of a stored run is a compare-and-set on the
//! version the run was read at (a start on a thread, on the thread's latest
//! run), so of racing transitions, on any replica, exactly one is stored,
//! and a refused one changes nothing.
//!
//! Owns no state: the store is the truth. A transition that gives this
//! replica the run (a start, a Resume's claim, a takeover) stores the run's
//! first chunks with this replica's lease, then hands the run to the
//! execution (`execute`), whose stream the client reads, or the client to
//! the fan-out (`follow`) when the run is another request's. It never steps
//! a run: the transitions of a running run (suspend, complete, fail) are
//! its execution's, which the lifecycle stops through the run's live entry
//! (a cancel request, or a fence once the run is deleted).
//!
//! Of it the other parts call only `Inner::expire_if_due`.

mod auto_answer;
mod cancel;
mod cancel_remote;
mod expiry;
mod recovery;
mod resume;
mod retention;
mod start;
mod thread_turn;

pub use resume::{CallAnswer, ResumeRun};
pub use start::StartRun;
