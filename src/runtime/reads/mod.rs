//! Reads: what clients read of runs and threads (GetRun, ListRuns,
//! GetThread, ListThreads), the tenant check every request about one run
//! starts with (`load_run_of`), and the history a run of a thread continues
//! from, which its execution reads at its first step. A tenant only ever
//! reads its own runs and threads.
//!
//! Owns nothing and never writes; the other parts use its tenant check and
//! thread history. A run read one at a time past its time to live is
//! expired through the lifecycle's `expire_if_due` first, so that it reads
//! as EXPIRED; listings show runs as stored.
//!
//! Its API to the other parts: `Inner::load_run_of`,
//! `Inner::thread_history` and what is re-exported below.

mod get_run;
mod list;
mod thread_history;
mod thread_read;

pub use list::{ListRuns, RunPage, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub(super) use thread_history::in_thread_order;
pub(super) use thread_read::thread_not_found;
pub use thread_read::{ListThreads, ThreadPage, ThreadView};
