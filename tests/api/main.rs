//! agentd's integration tests: one test binary; each test starts a real
//! server on an ephemeral port and drives it with the generated client.

mod helpers;

mod ask_user;
mod readme;
mod restart;
mod resume_validation;
mod service;
mod store;
