//! The listen port's side for browsers, beside plain gRPC: gRPC-Web
//! (tonic-web: `application/grpc-web(+proto)` and `application/grpc-web-text`
//! over HTTP/1.1 and HTTP/2) in front of every gRPC service, so that a
//! browser call meets the same authentication, limits and draining as a
//! gRPC one; and the routes of plain HTTP requests, which are the
//! surfaces' pages (the inbox, the agent cards), all behind the front door
//! (`door/`: allowed hosts and origins, CORS, unknown paths). It only
//! routes: what a request does is the services' business.

use axum::http::Request;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic_web::{GrpcWebLayer, GrpcWebService};
use tower_layer::Layer;

use crate::door::Door;
use crate::grpc::caller::Transport;

/// A gRPC service that also answers gRPC-Web, each gRPC-Web call marked
/// as one (see [`Transport`]) before it is translated to gRPC.
pub(super) fn grpc_web<S: NamedService>(service: S) -> MarkTransport<GrpcWebService<S>> {
    MarkTransport(GrpcWebLayer::new().layer(service))
}

/// Puts a gRPC-Web call's [`Transport`] (gRPC-Web, or the inbox's) in its
/// request's extensions, where the gRPC surface reads who decided through
/// what; plain gRPC calls pass unmarked.
#[derive(Clone, Debug)]
pub(super) struct MarkTransport<S>(S);

impl<S: NamedService> NamedService for MarkTransport<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> tonic::codegen::Service<Request<B>> for MarkTransport<S>
where
    S: tonic::codegen::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        if let Some(transport) = Transport::of(request.headers()) {
            request.extensions_mut().insert(transport);
        }
        self.0.call(request)
    }
}

/// The gRPC services' routes with `pages` (the plain-HTTP routes of the
/// surfaces: the agent cards, the inbox, MCP, AG-UI, A2A's JSON bindings)
/// beside them, all behind `door`, measured by `measure` in front of it.
pub(super) fn with_pages(
    grpc: Routes,
    pages: axum::Router,
    door: &Door,
    measure: super::http_metrics::Measure,
) -> Routes {
    Routes::from(door.around(grpc.into_axum_router().merge(pages)).layer(measure))
}
