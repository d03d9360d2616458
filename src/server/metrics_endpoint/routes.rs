//! The HTTP side of the metrics endpoint, on axum (hyper): `GET` and
//! `HEAD /metrics` on a listener of its own, HTTP/1.1 with keep-alive, each
//! scrape in the format its `Accept` header asks for (`accept.rs`); any
//! other path is 404, any other method 405 with `Allow`. It only reads
//! from the runtime.

use std::future::Future;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;

use super::accept::negotiate;
use crate::runtime::Runtime;

const PLAIN_TEXT: &str = "text/plain; charset=utf-8";

/// Serves the metrics of `runtime` on `listener` until `shutdown`
/// resolves; then it answers the requests under way and closes.
pub async fn serve_http(
    listener: TcpListener,
    runtime: Runtime,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(runtime))
        .with_graceful_shutdown(shutdown)
        .await
}

fn router(runtime: Runtime) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(runtime)
}

/// A scrape; `HEAD` is answered as `GET`, without the body.
async fn metrics(State(runtime): State<Runtime>, headers: HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|value| value.to_str().ok());
    let format = negotiate(accept);
    match super::scrape(&runtime, format).await {
        Ok(body) => (
            [
                (header::CONTENT_TYPE, format.content_type()),
                (header::VARY, "Accept"),
            ],
            body,
        )
            .into_response(),
        Err(error) => {
            tracing::warn!(%error, "metrics: rendering failed");
            let body = format!("rendering the metrics failed: {error}\n");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, PLAIN_TEXT)],
                body,
            )
                .into_response()
        }
    }
}

async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, PLAIN_TEXT)],
        "not found: the metrics are at /metrics\n",
    )
        .into_response()
}
