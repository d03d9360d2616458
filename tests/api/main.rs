//! agentd's integration tests: one test binary; each test starts a real
//! server on an ephemeral port and drives it with the generated client.

mod configured;
mod helpers;

mod lifecycle;

mod approval;
mod ask_user;
mod call_directive;
mod custom_tool;
mod expiry;
mod list_runs;
mod readme;
mod restart;
mod resume_validation;
mod service;
mod store;
