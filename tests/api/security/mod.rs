//! Security and hard limits through the gRPC client over real
//! connections: API keys, TLS and mutual TLS, each limit (the streams of
//! a tenant on every surface among them), deadlines, draining shutdown,
//! MCP sessions bound to their key, hostile input, and the front door
//! every surface goes through.

pub(crate) mod auth;
mod deadline;
mod door;
mod drain;
mod fuzz;
mod garbage;
mod limits;
mod mcp_sessions;
mod raw;
pub(crate) mod server;
pub(crate) mod sse;
mod stream_caps;
mod sweep;
mod tenants;
mod tls;
