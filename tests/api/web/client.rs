//! The generated client speaking gRPC-Web (tonic-web's client layer) over
//! HTTP/1.1 or HTTP/2, sending an API key or none: what a browser sends,
//! from Rust.

use std::net::SocketAddr;

use agentd::pb::agent_service_client::AgentServiceClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tonic::body::Body;
use tonic::service::interceptor::InterceptedService;
use tonic_web::{GrpcWebCall, GrpcWebClientLayer, GrpcWebClientService};
use tower_layer::Layer;

use crate::security::server::Bearer;

/// The HTTP version a client speaks.
#[derive(Clone, Copy, Debug)]
pub(super) enum Http {
    One,
    Two,
}

pub(super) type WebClient = AgentServiceClient<
    InterceptedService<GrpcWebClientService<Client<HttpConnector, GrpcWebCall<Body>>>, Bearer>,
>;

/// A gRPC-Web client of the agent service at `addr`.
pub(super) fn web_client(addr: SocketAddr, http: Http, key: Option<&str>) -> WebClient {
    let mut builder = Client::builder(TokioExecutor::new());
    if let Http::Two = http {
        builder.http2_only(true);
    }
    let connection = GrpcWebClientLayer::new().layer(builder.build_http());
    let origin = format!("http://{addr}").parse().expect("origin");
    AgentServiceClient::with_origin(
        InterceptedService::new(connection, Bearer(key.map(str::to_owned))),
        origin,
    )
}
