//! agentd's integration tests: one test binary; each test starts a real
//! server on an ephemeral port and drives it with the generated client.

mod configured;
mod helpers;

mod lifecycle;
mod logs;

mod a2a;
mod ag_ui;
mod approval;
mod approval_edits;
mod approval_rules;
mod ask_user;
mod bench;
mod call_directive;
mod chat;
mod claim;
mod controlled_store;
mod custom_tool;
mod decisions;
mod expiry;
mod grants;
mod health;
mod http_metrics;
mod list_runs;
mod mcp;
pub(crate) mod metrics;
mod outbound;
mod output_gate;
mod pg;
mod process;
mod providers;
mod races;
mod readme;
mod reminders;
mod replicas;
mod restart;
mod resume_validation;
mod run_context;
pub(crate) mod security;
mod service;
mod startup;
mod store;
mod store_faults;
mod threads;
mod trace_context;
mod user_tools;
pub(crate) mod watch_runs;
mod web;
mod webhooks;
