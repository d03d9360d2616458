//! The gRPC server metrics (`crate::metrics::GrpcMethodMetrics`), recorded
//! by a tower service around each gRPC service on the port: a call is
//! started when it comes in and handled with the status it ended with
//! (from the response headers when it failed at once, else from the
//! trailers that end its body; `Canceled` when the client left first), and
//! its handling time runs to the end of its response body, the last
//! message of a stream included. Messages are counted as their gRPC frames
//! pass in both directions. It sits inside gRPC-Web (a browser's call is
//! measured like any other) and outside authentication and the limits, so
//! refused calls count with their codes. Only the methods a service
//! declares are measured, each from start-up at zero: a request for any
//! other path passes through unmeasured.

mod body;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use prost::Message;
use prost_types::FileDescriptorSet;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::Service;
use tonic::codegen::StdError as BoxError;
use tonic::server::NamedService;

use crate::metrics::{GrpcMethodMetrics, GrpcType, Metrics};
use crate::pb;

use body::{Call, CountedRequest, MeasuredResponse};

/// The descriptors of every service the port may serve.
const DESCRIPTOR_SETS: [&[u8]; 5] = [
    pb::FILE_DESCRIPTOR_SET,
    pb::A2A_FILE_DESCRIPTOR_SET,
    tonic_health::pb::FILE_DESCRIPTOR_SET,
    tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
    tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
];

/// Wraps services so that their calls are measured in a runtime's metrics.
pub(super) struct Meter {
    metrics: Metrics,
    descriptors: Vec<FileDescriptorSet>,
}

impl Meter {
    pub(super) fn new(metrics: &Metrics) -> Self {
        let descriptors = DESCRIPTOR_SETS
            .iter()
            .filter_map(|bytes| match FileDescriptorSet::decode(*bytes) {
                Ok(set) => Some(set),
                Err(error) => {
                    tracing::warn!(%error, "a built-in descriptor set does not decode: its services are not measured");
                    None
                }
            })
            .collect();
        Self {
            metrics: metrics.clone(),
            descriptors,
        }
    }

    /// `service`, measured: each method its descriptor declares has its
    /// series from now on.
    pub(super) fn wrap<S: NamedService>(&self, service: S) -> Metered<S> {
        let methods = self
            .methods_of(S::NAME)
            .map(|(method, kind)| {
                let path = format!("/{}/{method}", S::NAME);
                (path, self.metrics.grpc_method(kind, S::NAME, method))
            })
            .collect();
        Metered {
            inner: service,
            methods: Arc::new(methods),
        }
    }

    /// The methods of the service named `full_name` (`package.Service`).
    fn methods_of<'a>(&'a self, full_name: &'a str) -> impl Iterator<Item = (&'a str, GrpcType)> + 'a {
        self.descriptors
            .iter()
            .flat_map(|set| &set.file)
            .flat_map(|file| file.service.iter().map(move |service| (file.package(), service)))
            .filter(move |(package, service)| {
                full_name
                    .strip_prefix(*package)
                    .and_then(|rest| rest.strip_prefix('.'))
                    .is_some_and(|name| name == service.name())
            })
            .flat_map(|(_, service)| &service.method)
            .map(|method| {
                let kind = GrpcType::of(method.client_streaming(), method.server_streaming());
                (method.name(), kind)
            })
    }
}

/// A service whose calls are measured.
#[derive(Clone)]
pub(super) struct Metered<S> {
    inner: S,
    /// By request path, `/package.Service/Method`.
    methods: Arc<HashMap<String, GrpcMethodMetrics>>,
}

impl<S: NamedService> NamedService for Metered<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<Request<Body>> for Metered<S>
where
    S: Service<Request<Body>, Response = Response<B>, Error = Infallible>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let Some(method) = self.methods.get(request.uri().path()).cloned() else {
            let responding = self.inner.call(request);
            return Box::pin(async move {
                let Ok(response) = responding.await;
                Ok(response.map(Body::new))
            });
        };
        let call = Call::start(method.clone(), Instant::now());
        let request = request.map(|body| Body::new(CountedRequest::new(body, method)));
        let responding = self.inner.call(request);
        Box::pin(async move {
            // Dropped before the response (the client left): `call` counts
            // the call as cancelled.
            let Ok(response) = responding.await;
            // A status in the headers: the call ended without a message.
            Ok(match body::grpc_status(response.headers()) {
                Some(code) => {
                    call.finish(code);
                    response.map(Body::new)
                }
                None => response.map(|body| Body::new(MeasuredResponse::new(body, call))),
            })
        })
    }
}
