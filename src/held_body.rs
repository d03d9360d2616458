//! A response body that keeps a value alive for as long as the body is:
//! until its last frame is sent, or until it is dropped unfinished (the
//! client left, the connection closed). A stream's slot in the stream gate
//! and a count of open streams are held this way, so that they end with the
//! stream however it ends. Every frame passes through unchanged.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};

/// `body`, holding `value` until it is dropped.
pub(crate) fn hold<T: Send + Unpin + 'static>(body: Body, value: T) -> Body {
    Body::new(Held { body, _value: value })
}

struct Held<T> {
    body: Body,
    _value: T,
}

impl<T: Unpin> http_body::Body for Held<T> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
