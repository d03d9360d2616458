//! Security and hard limits through the gRPC client over real
//! connections: API keys, TLS and mutual TLS, each limit, deadlines,
//! draining shutdown, and hostile input.

pub mod auth;
mod deadline;
mod drain;
mod fuzz;
mod garbage;
mod limits;
mod raw;
pub mod server;
mod sweep;
mod tenants;
mod tls;
