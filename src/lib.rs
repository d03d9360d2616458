//! agentd: hosts LLM agents whose tools can pause a run to ask a person
//! something, keep the run durably, and continue it when an answer arrives,
//! on any replica.
//!
//! The library is usable without gRPC: build a [`runtime::Runtime`] from an
//! [`agent::AgentRegistry`] and a [`store::RunStore`], then start and resume
//! runs directly. [`server::serve`] puts the gRPC edge in front of it.

pub mod a2a;
pub mod agent;
pub mod auth;
pub mod chat;
pub mod config;
pub mod domain;
pub mod grpc;
pub mod inbox;
pub mod limits;
pub mod metrics;
pub mod model;
pub mod propagation;
pub mod runtime;
pub mod server;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod webhooks;

/// Generated protobuf and tonic code for `agentd.v1`.
pub mod pb {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("agentd.v1");

    /// Encoded file descriptor set, served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/agentd_descriptor.bin"));

    /// Encoded file descriptor set of `lf.a2a.v1` (empty when the build
    /// could not find it), served by reflection.
    pub const A2A_FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/a2a_descriptor.bin"));
}
