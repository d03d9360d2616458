//! Measures the chunk streams the server sends: how many are open (a gauge
//! that goes down when a stream is dropped, however it ends) and how long
//! the first chunk took from the request. Passes every item through
//! unchanged.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio_stream::Stream;

use super::Metrics;

/// The streaming RPC a stream answers, as the `rpc` label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rpc {
    StreamAgent,
    Resume,
    SubscribeRun,
    WatchRuns,
}

impl Rpc {
    pub const ALL: [Rpc; 4] = [Rpc::StreamAgent, Rpc::Resume, Rpc::SubscribeRun, Rpc::WatchRuns];

    /// Whether its first chunk's latency is the server's: a watch's first
    /// event comes whenever a run changes.
    pub(super) fn has_first_chunk_latency(self) -> bool {
        !matches!(self, Rpc::WatchRuns)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Rpc::StreamAgent => "stream_agent",
            Rpc::Resume => "resume",
            Rpc::SubscribeRun => "subscribe_run",
            Rpc::WatchRuns => "watch_runs",
        }
    }
}

/// A stream counted among the open ones while it exists.
pub struct MeasuredStream<S> {
    inner: S,
    metrics: Metrics,
    rpc: Rpc,
    /// When the request came in; taken at the first chunk.
    requested: Option<Instant>,
}

impl Metrics {
    /// Wraps the stream answering a request that came in at `requested`.
    pub fn measure_stream<S>(&self, rpc: Rpc, requested: Instant, inner: S) -> MeasuredStream<S> {
        self.families
            .active_streams
            .with_label_values(&[rpc.as_str()])
            .inc();
        MeasuredStream {
            inner,
            metrics: self.clone(),
            rpc,
            requested: rpc.has_first_chunk_latency().then_some(requested),
        }
    }
}

impl<S: Stream + Unpin> Stream for MeasuredStream<S> {
    type Item = S::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_next(cx);
        if let (Poll::Ready(Some(_)), Some(requested)) = (&polled, this.requested) {
            this.requested = None;
            this.metrics
                .families
                .first_chunk
                .with_label_values(&[this.rpc.as_str()])
                .observe(requested.elapsed().as_secs_f64());
        }
        polled
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<S> Drop for MeasuredStream<S> {
    fn drop(&mut self) {
        self.metrics
            .families
            .active_streams
            .with_label_values(&[self.rpc.as_str()])
            .dec();
    }
}
