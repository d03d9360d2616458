//! Reads: what clients read of runs and threads.

mod list;
mod thread_read;

pub use list::{ListRuns, RunPage, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE};
pub use thread_read::{ListThreads, ThreadPage, ThreadView};
