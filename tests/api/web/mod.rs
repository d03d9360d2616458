//! The listen port as browsers reach it: gRPC-Web (HTTP/1.1 and HTTP/2,
//! binary and text) with the same keys and limits as gRPC, CORS, the plain
//! HTTP routes and the inbox's pages, a real gRPC-Web client under Node,
//! and the inbox in a real browser.

pub(crate) mod browser;
mod cards;
mod client;
mod cors;
mod grpc_web;
pub(crate) mod node;
