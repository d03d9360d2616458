//! The HTTP surfaces' metrics (`crate::metrics::HttpSurfaceMetrics`),
//! recorded by a tower layer around each surface's routes: a request is
//! counted with the status code it was answered with (the surface's own
//! refusals, authentication and limits among them), and a response that
//! streams events (`text/event-stream`, or AG-UI's protobuf encoding) is
//! counted among the open streams until its body ends or is dropped.
//! gRPC-Web calls are gRPC calls, measured with them (`grpc_metrics/`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, Request, Response};
use tonic::codegen::Service;
use tower_layer::Layer;

use crate::metrics::{HttpSurface, HttpSurfaceMetrics, Metrics};

/// The media types of responses that stream events.
const STREAMING: [&str; 2] = ["text/event-stream", "application/vnd.ag-ui.event+proto"];

/// Measures the routes it wraps as `surface`.
#[derive(Clone)]
pub(super) struct Measure(HttpSurfaceMetrics);

impl Measure {
    pub(super) fn surface(metrics: &Metrics, surface: HttpSurface) -> Self {
        Self(metrics.http_surface(surface))
    }
}

impl<S> Layer<S> for Measure {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Measured<S> {
        Measured {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// A surface's routes, measured.
#[derive(Clone)]
pub(super) struct Measured<S> {
    inner: S,
    metrics: HttpSurfaceMetrics,
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
        let metrics = self.metrics.clone();
        let answering = self.inner.call(request);
        Box::pin(async move {
            let response = answering.await?;
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
