//! The lifecycle of a run: the transitions clients and sweeps ask for.

mod auto_answer;
mod cancel;
mod cancel_remote;
mod expiry;
mod recovery;
mod resume;
mod threads;

pub use resume::ResumeRun;
pub(super) use threads::{in_thread_order, Turn};
