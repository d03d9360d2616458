//! A request body read within its time and size: `limits.request_body_timeout`
//! from the moment the door takes the request, `limits.max_request_bytes`
//! at most. The JSON surfaces' bodies are read whole here, so that a slow
//! or oversized one is refused in the surface's own shape before any
//! handler runs; a gRPC body (one message, never a client stream in these
//! services) is handed on with the same deadline, which ends it with
//! DEADLINE_EXCEEDED. tower-http's `TimeoutBody` bounds the wait for each
//! frame, not the whole body, so a byte every few seconds would pass it:
//! hence [`DeadlineBody`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures_util::StreamExt;
use http_body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::surface::{Refusal, Refused};

/// Reads `body` whole: at most `max` bytes, within `timeout`.
pub(super) async fn read(body: Body, max: usize, timeout: Duration) -> Result<Bytes, Refusal> {
    let reading = async {
        let mut stream = body.into_data_stream();
        let mut read = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|error| {
                Refusal::new(
                    Refused::BadRequest,
                    format!("the request body could not be read: {error}"),
                )
            })?;
            if read.len() + chunk.len() > max {
                return Err(too_large(max));
            }
            read.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(read))
    };
    tokio::time::timeout(timeout, reading)
        .await
        .unwrap_or_else(|_| Err(timed_out(timeout)))
}

/// The refusal of a body over `max` bytes.
pub(super) fn too_large(max: usize) -> Refusal {
    Refusal::new(
        Refused::TooLarge,
        format!("the request body is over the limit of {max} bytes (limits.max_request_bytes)"),
    )
}

fn timed_out(timeout: Duration) -> Refusal {
    Refusal::new(
        Refused::BodyTimeout,
        format!(
            "the request body did not arrive within {} (limits.request_body_timeout)",
            crate::config::duration::short(timeout)
        ),
    )
}

/// A body that ends with an error once its deadline passes: a
/// [`tonic::Status`] of DEADLINE_EXCEEDED, which tonic answers as it is.
pub(super) struct DeadlineBody {
    inner: Body,
    deadline: Pin<Box<Sleep>>,
    timeout: Duration,
}

impl DeadlineBody {
    pub(super) fn new(inner: Body, timeout: Duration) -> Self {
        Self {
            inner,
            deadline: Box::pin(tokio::time::sleep_until(Instant::now() + timeout)),
            timeout,
        }
    }
}

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            Poll::Ready(()) => {
                let refusal = timed_out(self.timeout);
                Poll::Ready(Some(Err(Box::new(refusal.status()))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
