//! The HTTP surfaces' metrics (`crate::metrics::HttpSurfaceMetrics`),
//! recorded by one tower layer in front of the door, which tells the
//! surface of a request by its path as the door does: a request is
//! counted with the status code it was answered with (the door's refusals
//! and the surface's own, authentication and limits among them; an
//! unknown path under the inbox's), and a response that
//! streams events (`text/event-stream`, or AG-UI's protobuf encoding) is
//! counted among the open streams until its body ends or is dropped.
//! gRPC-Web calls are gRPC calls, measured with them (`grpc_metrics/`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, Request, Response};
use tonic::codegen::Service;
use tower_layer::Layer;

use crate::door::Surface;
use crate::metrics::{HttpSurface, HttpSurfaceMetrics, Metrics};

/// The media types of responses that stream events.
const STREAMING: [&str; 2] = ["text/event-stream", "application/vnd.ag-ui.event+proto"];

/// Measures the routes it wraps, each request as its surface.
#[derive(Clone)]
pub(super) struct Measure(Arc<[HttpSurfaceMetrics]>);

impl Measure {
    pub(super) fn new(metrics: &Metrics) -> Self {
        Self(
            HttpSurface::ALL
                .map(|surface| metrics.http_surface(surface))
                .into(),
        )
    }

    /// The series of the surface `request` is for; `None` for gRPC and
    /// gRPC-Web, measured as gRPC calls.
    fn of<B>(&self, request: &Request<B>) -> Option<HttpSurfaceMetrics> {
        let path = request.uri().path();
        let surface = match Surface::of(path, request.headers()) {
            Surface::Grpc | Surface::GrpcWeb => return None,
            Surface::Mcp => HttpSurface::Mcp,
            Surface::AgUi => HttpSurface::AgUi,
            Surface::A2aJsonRpc => HttpSurface::A2aJsonRpc,
            Surface::A2aRest => HttpSurface::A2aRest,
            Surface::Web if path.starts_with("/.well-known/") => HttpSurface::AgentCard,
            Surface::Web => HttpSurface::Inbox,
        };
        let index = HttpSurface::ALL.iter().position(|each| *each == surface)?;
        Some(self.0[index].clone())
    }
}

impl<S> Layer<S> for Measure {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Measured<S> {
        Measured {
            inner,
            measure: self.clone(),
        }
    }
}

/// The surfaces' routes, measured.
#[derive(Clone)]
pub(super) struct Measured<S> {
    inner: S,
    measure: Measure,
}

impl<S, B> Service<Request<B>> for Measured<S>
where
    S: Service<Request<B>, Response = Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let metrics = self.measure.of(&request);
        let answering = self.inner.call(request);
        Box::pin(async move {
            let response = answering.await?;
            let Some(metrics) = metrics else {
                return Ok(response);
            };
            metrics.answered(response.status().as_u16());
            if !streams_events(&response) {
                return Ok(response);
            }
            let open = metrics.stream_opened();
            Ok(response.map(|body| crate::held_body::hold(body, open)))
        })
    }
}

fn streams_events(response: &Response<Body>) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| STREAMING.iter().any(|media| value.starts_with(media)))
}
