//! agentd: hosts LLM agents whose tools can pause a run to ask a person
//! something, keep the run durably, and continue it when an answer arrives,
//! on any replica, through any of the protocols it speaks.
//!
//! The map, top down. A module imports only those below it, but for the
//! door and the surfaces, which use each other (the surfaces its stream
//! gate and caller, the door their paths and refusal shapes). No file
//! imports one that imports it back.
//!
//! ```text
//! cli/         the command line: `serve`, `chat`, `bench` (main.rs only
//!              sets the allocator)
//! server/      wires everything: settings (the whole agentd.toml), the
//!              runtime, the surfaces on one port, TLS, health, draining
//! door/        the front door every surface goes through: who calls (API
//!              keys, the caller's tenant and name), allowed hosts and
//!              origins, content types, body size and time, every
//!              refusal in the shape of the surface it is for, and the
//!              gate of every surface's streams
//! surfaces     convert and authorise, nothing else; each calls the runtime
//!              API and never the store:
//!   grpc/        agentd.v1 (also over gRPC-Web)   a2a/      A2A v1.0
//!   inbox/       the web inbox's pages            webhooks/ outbound events
//!   mcp/         the agents as MCP tools (Streamable HTTP at /mcp; a
//!                suspended run asks the MCP client by elicitation)
//!   ag_ui/       the agents for AG-UI frontends (POST /ag-ui/{agent};
//!                a suspended run's questions are interrupts)
//!              (a2a/, webhooks/ and ag_ui/ borrow grpc/'s conversions of
//!              agentd.v1 messages and JSON values, a2a/ and ag_ui/ its
//!              reading of trace context, a2a/ its tenant check; chat/
//!              its JSON conversions)
//! runtime/     the one API every surface calls (runtime/api.rs), and
//!              behind it the lifecycle of runs, their execution, the
//!              fan-out of chunks to clients, reads, deliveries
//! agent/       the agent loop: model step, tool calls, next step
//! model/       language models (scripted, OpenAI, Anthropic)
//! tools/       ask_user, human_review, client, HTTP and MCP tools
//!              (model/ and tools/ side by side: neither imports the other)
//! store/       small traits by what callers need; SQLite, PostgreSQL, memory
//!              (its own crate, crates/agentd-store, on the domain only)
//! domain/      the plain data all of the above speak: runs, their phases
//!              and checked transitions, chunks, questions and answers
//!              (its own crate, crates/agentd-domain, re-exported here:
//!              the compiler holds that it imports nothing of the others)
//! config/      settings declared once (flag, AGENTD_* variable, file key)
//! ```
//!
//! Beside them: `auth` (API keys and tenants), `limits`, `metrics`,
//! `telemetry` (logs and traces), `held_body` (a response body that holds
//! a stream's slot or count until it ends), `tenant_slots` (what each
//! tenant holds against a limit: executing runs, open streams),
//! `propagation` (trace context
//! to the services a run calls), `outbound` (where outbound requests may
//! go: the address policy of caller-supplied URLs, the redirect policy of
//! configured ones), `http_client` (every outbound HTTP client is built
//! there: reqwest over rustls with ring), `chat` (the terminal client),
//! `bench` (`agentd bench`, with the feature of that name), `pb` (the
//! generated protobuf code).
//!
//! A Resume, end to end: `grpc/convert/request.rs` converts it,
//! `runtime/api.rs` takes it, `runtime/lifecycle/resume.rs` validates the
//! answer against the pending call (with `agent/` resolving it) and commits
//! the claim with the answer in one compare-and-set
//! (`domain/run/transitions.rs` prepares the commit, a `store/` backend
//! makes it), `runtime/execution/` continues the run, its emitter stores
//! each chunk before releasing it, and `runtime/fanout/stream.rs` hands the
//! chunks to the client's stream, which `grpc/` sends.
//!
//! The library is usable without gRPC: build a [`runtime::Runtime`] from an
//! [`agent::AgentRegistry`] and a [`store::Store`] ([`store::open`]), then
//! start and resume runs directly. [`server::serve`] puts every surface in
//! front of it.

mod a2a;
mod ag_ui;
pub mod agent;
pub mod auth;
#[cfg(feature = "bench")]
mod bench;
pub mod chat;
pub mod cli;
pub mod config;
pub use agentd_domain as domain;
pub mod door;
pub mod grpc;
mod held_body;
pub mod http_client;
mod inbox;
pub mod limits;
mod mcp;
pub mod metrics;
pub mod model;
pub mod outbound;
mod propagation;
pub mod runtime;
pub mod server;
pub use agentd_store as store;
pub mod telemetry;
pub mod tenant_slots;
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
