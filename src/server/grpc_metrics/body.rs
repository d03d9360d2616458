//! The bodies of a measured call: the request's counts its messages as the
//! service reads them; the response's counts its messages and ends the
//! call at its trailers (or when it is dropped unfinished).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tonic::body::Body;
use tonic::codegen::http::HeaderMap;
use tonic::{Code, Status};

use crate::metrics::GrpcMethodMetrics;

/// A call under way; it counts as handled once, with the code it ended
/// with, or as cancelled if it is dropped first.
pub(super) struct Call {
    method: GrpcMethodMetrics,
    started: Instant,
    finished: bool,
}

impl Call {
    pub(super) fn start(method: GrpcMethodMetrics, started: Instant) -> Self {
        method.started();
        Self {
            method,
            started,
            finished: false,
        }
    }

    pub(super) fn finish(mut self, code: Code) {
        self.end(code);
    }

    fn end(&mut self, code: Code) {
        if !self.finished {
            self.finished = true;
            self.method.handled(code, self.started.elapsed().as_secs_f64());
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.end(Code::Cancelled);
    }
}

/// The `grpc-status` in `headers`, if any.
pub(super) fn grpc_status(headers: &HeaderMap) -> Option<Code> {
    let value = headers.get("grpc-status")?;
    Some(Code::from_bytes(value.as_bytes()))
}

/// A request body that counts the messages read from it.
pub(super) struct CountedRequest {
    inner: Body,
    method: GrpcMethodMetrics,
    frames: Frames,
}

impl CountedRequest {
    pub(super) fn new(inner: Body, method: GrpcMethodMetrics) -> Self {
        Self {
            inner,
            method,
            frames: Frames::default(),
        }
    }
}

impl http_body::Body for CountedRequest {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                this.method.received(this.frames.feed(data));
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that counts its messages and ends the call.
pub(super) struct MeasuredResponse<B> {
    inner: B,
    call: Call,
    frames: Frames,
}

impl<B> MeasuredResponse<B> {
    pub(super) fn new(inner: B, call: Call) -> Self {
        Self {
            inner,
            call,
            frames: Frames::default(),
        }
    }
}

impl<B: http_body::Body<Data = Bytes> + Unpin> http_body::Body for MeasuredResponse<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.call.method.sent(this.frames.feed(data));
                } else if let Some(trailers) = frame.trailers_ref() {
                    this.call.end(grpc_status(trailers).unwrap_or(Code::Unknown));
                }
            }
            // The body broke off: the client gets no status.
            Poll::Ready(Some(Err(_))) => this.call.end(Code::Unknown),
            // Ended without trailers, so without a status.
            Poll::Ready(None) => this.call.end(Code::Unknown),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The length-prefixed messages of a gRPC body (a flag byte, a four-byte
/// big-endian length, the message), counted as their bytes pass however
/// they are split.
#[derive(Default)]
struct Frames {
    /// The bytes of the current prefix read so far.
    prefix: [u8; PREFIX],
    prefix_read: usize,
    /// The bytes of the current message still to come.
    message_left: u64,
}

const PREFIX: usize = 5;

impl Frames {
    /// Reads `bytes`; returns how many messages they completed.
    fn feed(&mut self, mut bytes: &[u8]) -> u64 {
        let mut completed = 0;
        while !bytes.is_empty() {
            if self.message_left > 0 {
                let taken = bytes
                    .len()
                    .min(usize::try_from(self.message_left).unwrap_or(usize::MAX));
                bytes = &bytes[taken..];
                self.message_left -= taken as u64;
                if self.message_left == 0 {
                    completed += 1;
                }
                continue;
            }
            let taken = bytes.len().min(PREFIX - self.prefix_read);
            self.prefix[self.prefix_read..self.prefix_read + taken].copy_from_slice(&bytes[..taken]);
            self.prefix_read += taken;
            bytes = &bytes[taken..];
            if self.prefix_read == PREFIX {
                self.prefix_read = 0;
                let length =
                    u32::from_be_bytes([self.prefix[1], self.prefix[2], self.prefix[3], self.prefix[4]]);
                self.message_left = u64::from(length);
                if length == 0 {
                    completed += 1;
                }
            }
        }
        completed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(length: u32) -> Vec<u8> {
        let mut frame = vec![0];
        frame.extend_from_slice(&length.to_be_bytes());
        frame.extend(std::iter::repeat_n(7u8, length as usize));
        frame
    }

    #[test]
    fn counts_messages_however_the_bytes_are_split() {
        let mut body = message(3);
        body.extend(message(0));
        body.extend(message(300));
        for split in [1, 2, 4, 5, 6, 64, body.len()] {
            let mut frames = Frames::default();
            let counted: u64 = body.chunks(split).map(|chunk| frames.feed(chunk)).sum();
            assert_eq!(counted, 3, "chunks of {split}");
        }
        let mut frames = Frames::default();
        assert_eq!(
            frames.feed(&body[..body.len() - 1]),
            2,
            "the last one is not complete"
        );
        assert_eq!(frames.feed(&body[body.len() - 1..]), 1);
    }
}
