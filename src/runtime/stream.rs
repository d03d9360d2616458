//! One stream of a run as its client receives it. The run's follower (see
//! `subscribe.rs`) hands the stream stored chunks in deliveries: a whole
//! stored write, or a replayed page, at once and shared rather than copied,
//! so that a response can send the chunks stored together in one write of
//! its own. The stream ends right after the chunk that ends it, without
//! waiting for anything else to let go of it.

use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::mpsc;
use tokio_stream::Stream;

use crate::chunk::Event;
use crate::run::RunId;

/// Chunks handed to a stream together: `events[range]`, in seq order.
pub(crate) struct Delivery {
    events: Arc<[Event]>,
    range: Range<usize>,
    /// The stream ends with the last of them.
    ends: bool,
}

impl Delivery {
    pub(crate) fn new(events: Arc<[Event]>, range: Range<usize>, ends: bool) -> Self {
        Self { events, range, ends }
    }
}

/// The chunks of one stream of a run, from `start` to `finish` (or, for a
/// subscription, from where it asked).
pub struct RunStream {
    pub run_id: RunId,
    deliveries: mpsc::Receiver<Delivery>,
    /// The delivery being handed out: `events[range]` are still to come,
    /// and the stream ends after them if `ends`.
    events: Arc<[Event]>,
    range: Range<usize>,
    ends: bool,
    ended: bool,
}

impl RunStream {
    pub(crate) fn new(run_id: RunId, deliveries: mpsc::Receiver<Delivery>) -> Self {
        Self {
            run_id,
            deliveries,
            events: Arc::default(),
            range: 0..0,
            ends: false,
            ended: false,
        }
    }

    fn take(&mut self, delivery: Option<Delivery>) {
        match delivery {
            Some(Delivery { events, range, ends }) => {
                self.events = events;
                self.range = range;
                self.ends = ends;
            }
            None => self.ended = true,
        }
    }

    /// Waits until the first chunks are here, or the stream ended without
    /// any: a response that starts after this sends them with its headers.
    pub async fn first_chunks(&mut self) {
        if self.range.is_empty() && !self.ended {
            let delivery = self.deliveries.recv().await;
            self.take(delivery);
        }
    }

    /// The next chunk, `None` once the stream ended.
    pub fn poll_next_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<&Event>> {
        loop {
            if let Some(index) = self.range.next() {
                self.ended |= self.ends && self.range.is_empty();
                return Poll::Ready(Some(&self.events[index]));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            let delivery = ready!(self.deliveries.poll_recv(cx));
            self.take(delivery);
        }
    }

    /// The stream of `convert(chunk)` for each chunk.
    pub fn map_events<T, F>(self, convert: F) -> MapEvents<F>
    where
        F: FnMut(&Event) -> T,
    {
        MapEvents {
            stream: self,
            convert,
        }
    }
}

/// See [`RunStream::map_events`].
pub struct MapEvents<F> {
    stream: RunStream,
    convert: F,
}

impl<T, F> Stream for MapEvents<F>
where
    F: FnMut(&Event) -> T + Unpin,
{
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        let event = ready!(this.stream.poll_next_event(cx));
        Poll::Ready(event.map(&mut this.convert))
    }
}

#[cfg(test)]
mod tests {
    use tokio_stream::StreamExt;

    use super::*;
    use crate::chunk::{Chunk, FinishReason, Usage};
    use crate::time::Timestamp;

    fn event(seq: u64, chunk: Chunk) -> Event {
        Event {
            seq,
            time: Timestamp::now(),
            chunk,
        }
    }

    fn finish(seq: u64) -> Event {
        let chunk = Chunk::Finish {
            reason: FinishReason::Stop,
            usage: Usage::default(),
            text: String::new(),
        };
        event(seq, chunk)
    }

    fn delta(seq: u64) -> Event {
        event(
            seq,
            Chunk::TextDelta {
                text: seq.to_string(),
            },
        )
    }

    #[tokio::test]
    async fn hands_out_each_delivery_in_order_and_ends_after_the_ending_one() {
        let (sender, receiver) = mpsc::channel(4);
        let events: Arc<[Event]> = vec![delta(1), delta(2), delta(3)].into();
        sender
            .try_send(Delivery::new(Arc::clone(&events), 1..3, false))
            .unwrap();
        let ending: Arc<[Event]> = vec![delta(4), finish(5)].into();
        sender.try_send(Delivery::new(ending, 0..2, true)).unwrap();
        let mut stream = RunStream::new(RunId::new(), receiver);
        stream.first_chunks().await;
        let seqs = stream.map_events(|event| event.seq).collect::<Vec<u64>>();
        let seqs = tokio::time::timeout(std::time::Duration::from_secs(5), seqs)
            .await
            .expect("the stream ends after its ending chunk, with its follower still there");
        assert_eq!(seqs, [2, 3, 4, 5]);
        drop(sender);
    }

    #[tokio::test]
    async fn ends_when_the_follower_goes_away() {
        let (sender, receiver) = mpsc::channel(4);
        let events: Arc<[Event]> = vec![delta(1)].into();
        sender.try_send(Delivery::new(events, 0..1, false)).unwrap();
        drop(sender);
        let seqs: Vec<u64> = RunStream::new(RunId::new(), receiver)
            .map_events(|event| event.seq)
            .collect()
            .await;
        assert_eq!(seqs, [1]);

        let (sender, receiver) = mpsc::channel::<Delivery>(1);
        drop(sender);
        let mut empty = RunStream::new(RunId::new(), receiver);
        empty.first_chunks().await;
        let none: Vec<u64> = empty.map_events(|event| event.seq).collect().await;
        assert!(none.is_empty());
    }
}
