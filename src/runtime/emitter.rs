//! The emitter numbers a run's chunks, streams them to the client that asked
//! and to the run's subscribers, and keeps them until the next commit stores
//! them. Chunks that must not be seen before they are stored (suspensions,
//! finishes) are held back and released right after the commit. A client
//! that goes away never stops the run (unless the run says so).

use std::sync::Arc;

use tokio::sync::mpsc;

use super::live::{LiveRun, Signal};
use crate::agent::ChunkSink;
use crate::chunk::{Chunk, Event};
use crate::time::Timestamp;

pub struct Emitter {
    live: Arc<LiveRun>,
    last_seq: u64,
    client: Option<mpsc::Sender<Event>>,
}

impl Emitter {
    /// An emitter continuing after `last_seq`, streaming to `client` (none
    /// for work nobody streams, such as cancelling a suspended run).
    pub(crate) fn new(live: Arc<LiveRun>, last_seq: u64, client: Option<mpsc::Sender<Event>>) -> Self {
        Self {
            live,
            last_seq,
            client,
        }
    }

    /// Releases events that were stored before this emitter existed (the
    /// first chunks of a start or a Resume).
    pub async fn release_stored(&mut self, events: Vec<Event>) {
        {
            let buffer = self.live.buffer();
            for event in &events {
                self.live.broadcast(&buffer, Signal::Chunk(event.clone()));
            }
        }
        for event in events {
            self.send(event).await;
        }
    }

    pub(crate) fn live(&self) -> &Arc<LiveRun> {
        &self.live
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// A copy of the events waiting for the next commit.
    pub fn unstored(&self) -> Vec<Event> {
        self.live.buffer().events.clone()
    }

    /// The client's channel, to watch for it going away.
    pub fn client(&self) -> Option<mpsc::Sender<Event>> {
        self.client.clone()
    }

    fn next_event(&mut self, chunk: Chunk) -> Event {
        self.last_seq += 1;
        Event {
            seq: self.last_seq,
            time: Timestamp::now(),
            chunk,
        }
    }

    /// Records a chunk that nobody may see before it is stored.
    pub fn hold(&mut self, chunk: Chunk) {
        let event = self.next_event(chunk);
        self.live.buffer().events.push(event);
    }

    /// Records a chunk and releases it now (after any held chunk, in order).
    pub async fn emit_now(&mut self, chunk: Chunk) {
        let event = self.next_event(chunk);
        let release = {
            let mut buffer = self.live.buffer();
            let nothing_held = buffer.released == buffer.events.len();
            buffer.events.push(event.clone());
            if nothing_held {
                buffer.released += 1;
                self.live.broadcast(&buffer, Signal::Chunk(event.clone()));
            }
            nothing_held
        };
        if release {
            self.send(event).await;
        }
    }

    /// The unstored events were committed: release what was held back.
    pub async fn committed(&mut self) {
        let held = {
            let mut buffer = self.live.buffer();
            let released = buffer.released;
            let held = buffer.events.split_off(released);
            for event in &held {
                self.live.broadcast(&buffer, Signal::Chunk(event.clone()));
            }
            *buffer = Default::default();
            held
        };
        for event in held {
            self.send(event).await;
        }
    }

    /// Forgets the held-back chunks (their commit failed): they are never
    /// sent, and their seqs are given out again.
    pub fn discard_held(&mut self) {
        let mut buffer = self.live.buffer();
        let dropped = buffer.events.len() - buffer.released;
        let released = buffer.released;
        buffer.events.truncate(released);
        self.last_seq -= dropped as u64;
    }

    async fn send(&mut self, event: Event) {
        if let Some(client) = &self.client {
            if client.send(event).await.is_err() {
                // The client left; the run goes on and stays resumable.
                tracing::debug!("client stream closed; continuing without it");
                self.client = None;
            }
        }
    }
}

/// Chunks numbered and kept for a commit that has not happened yet, before
/// anything is released: the first chunks of a start or a Resume, which only
/// count if the commit that carries them succeeds.
pub struct Staging {
    pub last_seq: u64,
    pub events: Vec<Event>,
}

impl Staging {
    pub fn after(last_seq: u64) -> Self {
        Self {
            last_seq,
            events: Vec::new(),
        }
    }

    pub fn push(&mut self, chunk: Chunk) {
        self.last_seq += 1;
        self.events.push(Event {
            seq: self.last_seq,
            time: Timestamp::now(),
            chunk,
        });
    }
}

impl ChunkSink for Staging {
    async fn emit(&mut self, chunk: Chunk) {
        self.push(chunk);
    }
}

impl ChunkSink for Emitter {
    async fn emit(&mut self, chunk: Chunk) {
        self.emit_now(chunk).await;
    }
}
