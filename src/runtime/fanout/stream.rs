//! One stream of a run as its client receives it. The run's follower (see
//! `subscribe.rs`) hands the stream stored chunks in deliveries: a whole
//! stored write, or a replayed page, at once and shared rather than copied,
//! so that a response can send the chunks stored together in one write of
//! its own. The stream ends right after the chunk that ends it, without
//! waiting for anything else to let go of it.
//!
//! Every stream of a run segment ends with a `finish`: when the store
//! refuses the run's writes, with an unstored ending (see [`Refusal`]).

use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::mpsc;
use tokio_stream::Stream;

use crate::domain::{Chunk, Event, FinishReason, RunFailure, RunId, Timestamp, Usage};

/// The code of the `error` chunk that ends a stream whose run the store
/// refused to store.
pub(super) const STORE_UNAVAILABLE: &str = "store_unavailable";

/// The store refused to store a run that streams were following here: each
/// of them ends with an `error` chunk (code [`STORE_UNAVAILABLE`]) and a
/// `finish` with reason `Error`, numbered right after the last chunk that
/// stream delivered. Neither is stored: the run stays as last stored
/// (RUNNING, its lease running out) and goes on from there once the store
/// accepts writes, here or on another replica, with its next chunks at
/// those seqs; SubscribeRun after the seq before the `error` follows it.
#[derive(Clone, Debug)]
pub(crate) struct Refusal {
    /// What the store said.
    pub error: String,
    /// The run's usage, for the `finish`.
    pub usage: Usage,
}

impl Refusal {
    /// The ending of a stream whose last delivered seq is `last`.
    fn ending(&self, last: u64) -> Delivery {
        let now = Timestamp::now();
        let failure = RunFailure {
            code: STORE_UNAVAILABLE.into(),
            message: format!(
                "the run store refused to store this run ({}); the run stays as stored \
                 up to seq {last} and goes on once the store accepts writes: \
                 SubscribeRun with after_seq {last} follows it",
                self.error
            ),
        };
        let finish = Chunk::Finish {
            reason: FinishReason::Error,
            usage: self.usage,
            text: String::new(),
        };
        let events: Arc<[Event]> = [Chunk::Error(failure), finish]
            .into_iter()
            .zip(1..)
            .map(|(chunk, n)| Event {
                seq: last + n,
                time: now,
                chunk,
            })
            .collect();
        Delivery {
            range: 0..events.len(),
            events,
            ends: true,
        }
    }

    /// Ends the stream of `client`, whose last delivered seq is `last`,
    /// with [`Refusal::ending`]; waits for room in the channel.
    pub(crate) async fn end(&self, client: &mpsc::Sender<Delivery>, last: u64) {
        // The client may have left meanwhile: nothing to tell then.
        let _ = client.send(self.ending(last)).await;
    }
}

/// Chunks handed to a stream together: `events[range]`, in seq order.
pub(crate) struct Delivery {
    events: Arc<[Event]>,
    range: Range<usize>,
    /// The stream ends with the last of them.
    ends: bool,
}

/// How a stream goes on after a delivery.
pub(crate) enum Next {
    /// Wait for the next stored chunks.
    More,
    /// The stream ended.
    Done,
    /// What came does not continue what was delivered: the store has it.
    Gap,
}

/// The part of `events` (stored chunks, in seq order) that continues a
/// stream whose last delivered seq is `*last`: the chunks after it, without
/// a gap, up to the `finish` after `ends_after` (if any), which ends the
/// stream. Advances `*last` over them.
pub(crate) fn continuation(
    events: Arc<[Event]>,
    last: &mut u64,
    ends_after: Option<u64>,
) -> (Option<Delivery>, Next) {
    let first = events.partition_point(|event| event.seq <= *last);
    let mut end = first;
    let mut next = Next::More;
    for event in &events[first..] {
        if event.seq != *last + 1 {
            next = Next::Gap;
            break;
        }
        *last = event.seq;
        end += 1;
        let finish = matches!(event.chunk, Chunk::Finish { .. });
        if finish && ends_after.is_some_and(|after| event.seq > after) {
            next = Next::Done;
            break;
        }
    }
    let ends = matches!(next, Next::Done);
    let delivery = (end > first).then_some(Delivery {
        events,
        range: first..end,
        ends,
    });
    (delivery, next)
}

/// Hands a follower of the run the client of a stream that its execution
/// can no longer feed, with the last seq delivered to it.
pub(crate) type HandOver = Box<dyn FnOnce(mpsc::Sender<Delivery>, u64) + Send>;

/// The client of an execution's own stream, fed straight from each write
/// of the execution, in order, without a task of its own in between. When
/// the client falls behind (its channel is full), or the execution stops
/// before the stream's end (fenced, or its writes refused), the client is
/// handed over to a follower of the run, which goes on from the store after
/// the last chunk delivered.
pub(crate) struct ClientFeed {
    client: mpsc::Sender<Delivery>,
    /// A `finish` after this seq ends the stream.
    after: u64,
    /// The last seq delivered.
    last: u64,
    hand_over: HandOver,
}

impl ClientFeed {
    pub(crate) fn new(client: mpsc::Sender<Delivery>, after: u64, hand_over: HandOver) -> Self {
        Self {
            client,
            after,
            last: after,
            hand_over,
        }
    }

    /// The client's channel, to watch for it going away.
    pub(crate) fn client(&self) -> mpsc::Sender<Delivery> {
        self.client.clone()
    }

    /// Delivers chunks just stored (see [`continuation`]). The feed, unless
    /// that ended it: the stream ended, the client went away, or it was
    /// handed over.
    pub(crate) fn deliver(mut self, events: Arc<[Event]>) -> Option<Self> {
        let delivered = self.last;
        let (delivery, next) = continuation(events, &mut self.last, Some(self.after));
        if let Some(delivery) = delivery {
            match self.client.try_send(delivery) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => return None,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    self.last = delivered;
                    self.hand_over();
                    return None;
                }
            }
        }
        match next {
            Next::More => Some(self),
            Next::Done => None,
            Next::Gap => {
                self.hand_over();
                None
            }
        }
    }

    /// Leaves the client to a follower of the run.
    pub(crate) fn hand_over(self) {
        (self.hand_over)(self.client, self.last);
    }

    /// Ends the client's stream with `refusal`'s ending, from a task of its
    /// own if the client is behind, so that the execution need not wait.
    pub(crate) fn end_refused(self, refusal: &Arc<Refusal>) {
        let ending = refusal.ending(self.last);
        if let Err(mpsc::error::TrySendError::Full(ending)) = self.client.try_send(ending) {
            let client = self.client;
            // Only a runtime being shut down has none: nobody to tell.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { client.send(ending).await });
            }
        }
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
    use crate::domain::Timestamp;
    use crate::domain::{Chunk, FinishReason, Usage};

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
            .try_send(Delivery {
                events: Arc::clone(&events),
                range: 1..3,
                ends: false,
            })
            .unwrap();
        let ending: Arc<[Event]> = vec![delta(4), finish(5)].into();
        sender
            .try_send(Delivery {
                events: ending,
                range: 0..2,
                ends: true,
            })
            .unwrap();
        let mut stream = RunStream::new(RunId::new(), receiver);
        stream.first_chunks().await;
        let seqs = stream.map_events(|event| event.seq).collect::<Vec<u64>>();
        let seqs = tokio::time::timeout(std::time::Duration::from_secs(5), seqs)
            .await
            .expect("the stream ends after its ending chunk, with its follower still there");
        assert_eq!(seqs, [2, 3, 4, 5]);
        drop(sender);
    }

    /// A feed whose hand-overs are recorded as the last seq delivered.
    fn recorded_feed(
        capacity: usize,
        after: u64,
    ) -> (ClientFeed, RunStream, Arc<std::sync::Mutex<Vec<u64>>>) {
        let (client, deliveries) = mpsc::channel(capacity);
        let handed = Arc::new(std::sync::Mutex::new(Vec::new()));
        let record = Arc::clone(&handed);
        let hand_over: HandOver = Box::new(move |_client, last| record.lock().unwrap().push(last));
        let feed = ClientFeed::new(client, after, hand_over);
        (feed, RunStream::new(RunId::new(), deliveries), handed)
    }

    #[tokio::test]
    async fn a_feed_ends_at_the_finish_after_its_start_and_hands_over_a_client_behind() {
        let (feed, stream, handed) = recorded_feed(8, 2);
        let feed = feed
            .deliver(vec![delta(1), delta(2), delta(3)].into())
            .expect("goes on");
        // The finish of the segment the stream follows ends it; what comes
        // after it in the same write is not this stream's.
        assert!(feed.deliver(vec![delta(4), finish(5), delta(6)].into()).is_none());
        let seqs: Vec<u64> = stream.map_events(|event| event.seq).collect().await;
        assert_eq!(seqs, [3, 4, 5]);
        assert!(handed.lock().unwrap().is_empty());

        let (feed, _stream, handed) = recorded_feed(1, 0);
        let feed = feed.deliver(vec![delta(1)].into()).expect("goes on");
        assert!(
            feed.deliver(vec![delta(2)].into()).is_none(),
            "the client is behind"
        );
        assert_eq!(*handed.lock().unwrap(), [1]);

        let (feed, _stream, handed) = recorded_feed(4, 0);
        assert!(feed.deliver(vec![delta(2)].into()).is_none(), "a gap");
        assert_eq!(*handed.lock().unwrap(), [0]);

        // What continues the stream before a gap is delivered first.
        let (feed, stream, handed) = recorded_feed(4, 0);
        assert!(feed.deliver(vec![delta(1), delta(3)].into()).is_none(), "a gap");
        assert_eq!(*handed.lock().unwrap(), [1]);
        let seqs: Vec<u64> = stream.map_events(|event| event.seq).collect().await;
        assert_eq!(seqs, [1]);

        let (feed, stream, handed) = recorded_feed(4, 0);
        drop(stream);
        assert!(feed.deliver(vec![delta(1)].into()).is_none(), "the client left");
        assert!(handed.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn ends_when_the_follower_goes_away() {
        let (sender, receiver) = mpsc::channel(4);
        let events: Arc<[Event]> = vec![delta(1)].into();
        sender
            .try_send(Delivery {
                events,
                range: 0..1,
                ends: false,
            })
            .unwrap();
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
