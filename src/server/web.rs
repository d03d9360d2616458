//! The listen port's side for browsers, beside plain gRPC: gRPC-Web
//! (tonic-web: `application/grpc-web(+proto)` and `application/grpc-web-text`
//! over HTTP/1.1 and HTTP/2) in front of every gRPC service, so that a
//! browser call meets the same authentication, limits and draining as a
//! gRPC one; CORS for the origins `--cors-allow-origin` allows (none by
//! default: a page served from this port needs none); and the routes of
//! plain HTTP requests, which are the surfaces' pages (the inbox, the agent cards). It only
//! routes: what a request does is the services' business.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use axum::response::IntoResponse;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic_web::{GrpcWebLayer, GrpcWebService};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_layer::Layer;

use crate::config::AllowedOrigins;
use crate::grpc::caller::{Transport, CLIENT_HEADER};

/// Headers a gRPC-Web call from a page may send: the call's own, its
/// deadline, the API key, and the name of the client (the inbox's).
const ALLOWED_HEADERS: [HeaderName; 6] = [
    header::CONTENT_TYPE,
    header::AUTHORIZATION,
    HeaderName::from_static("x-grpc-web"),
    HeaderName::from_static("x-user-agent"),
    HeaderName::from_static("grpc-timeout"),
    HeaderName::from_static(CLIENT_HEADER),
];

/// Headers a page may read from a response: a call's status, which comes
/// in the headers when the call fails before any message.
const EXPOSED_HEADERS: [HeaderName; 3] = [
    HeaderName::from_static("grpc-status"),
    HeaderName::from_static("grpc-message"),
    HeaderName::from_static("grpc-status-details-bin"),
];

/// How long a browser may keep a preflight's answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(2 * 60 * 60);

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
/// surfaces: the agent cards, the inbox) beside them, all behind CORS when
/// `cors` allows other origins.
pub(super) fn with_pages(grpc: Routes, pages: axum::Router, cors: Option<&AllowedOrigins>) -> Routes {
    let router = grpc.into_axum_router().merge(pages).fallback(not_found);
    match cors {
        Some(origins) => Routes::from(router.layer(cors_layer(origins))),
        None => Routes::from(router),
    }
}

/// What CORS answers for `origins`: preflights of gRPC-Web calls from
/// them are allowed, with the headers such a call sends and reads; any
/// other origin gets no `Access-Control-Allow-Origin`, so its browser
/// refuses the call.
fn cors_layer(origins: &AllowedOrigins) -> CorsLayer {
    let allow = match origins {
        AllowedOrigins::Any => AllowOrigin::any(),
        AllowedOrigins::List(_) => {
            let origins = origins.clone();
            AllowOrigin::predicate(move |origin: &HeaderValue, _| {
                origin.to_str().is_ok_and(|origin| origins.allows(origin))
            })
        }
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers(ALLOWED_HEADERS)
        .expose_headers(EXPOSED_HEADERS)
        .max_age(PREFLIGHT_MAX_AGE)
}

/// A request for no route: gRPC's UNIMPLEMENTED for a gRPC (or gRPC-Web)
/// call to an unknown service, else HTTP's 404.
async fn not_found(request: Request<Body>) -> Result<Response<Body>, Infallible> {
    let grpc = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"));
    if grpc {
        let status = tonic::Status::unimplemented(format!("no service at {}", request.uri().path()));
        let (parts, ()) = status.into_http::<()>().into_parts();
        return Ok(Response::from_parts(parts, Body::empty()));
    }
    Ok((
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{} is not here; the inbox is at /\n", request.uri().path()),
    )
        .into_response())
}
