//! Security and hard limits through the gRPC client over real
//! connections: API keys, TLS and mutual TLS, each limit, deadlines,
//! draining shutdown, hostile input, and the front door every surface
//! goes through.

pub mod auth;
mod deadline;
mod door;
mod drain;
mod fuzz;
mod garbage;
mod limits;
mod raw;
pub mod server;
mod tenants;
mod tls;
