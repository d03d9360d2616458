//! The emitter numbers a run's chunks, streams them to the client that asked
//! and keeps them until the next commit stores them. Chunks that must not be
//! seen before they are stored (suspensions, finishes) are held back and
//! sent right after the commit. A client that goes away never stops the run.

use tokio::sync::mpsc;

use crate::agent::ChunkSink;
use crate::chunk::{Chunk, Event};
use crate::time::Timestamp;

pub struct Emitter {
    last_seq: u64,
    /// Events produced since the last commit.
    unstored: Vec<Event>,
    /// Index of the first unstored event not yet sent (held back).
    unsent_from: usize,
    client: Option<mpsc::Sender<Event>>,
}

impl Emitter {
    /// An emitter continuing after `last_seq`, streaming to `client`.
    pub fn new(last_seq: u64, client: mpsc::Sender<Event>) -> Self {
        Self {
            last_seq,
            unstored: Vec::new(),
            unsent_from: 0,
            client: Some(client),
        }
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Events waiting for the next commit.
    pub fn unstored(&self) -> &[Event] {
        &self.unstored
    }

    /// Whether the client is still listening.
    pub fn client_attached(&self) -> bool {
        self.client.as_ref().is_some_and(|c| !c.is_closed())
    }

    fn push(&mut self, chunk: Chunk) {
        self.last_seq += 1;
        self.unstored.push(Event {
            seq: self.last_seq,
            time: Timestamp::now(),
            chunk,
        });
    }

    /// Records a chunk that the client may see only once it is stored.
    pub fn hold(&mut self, chunk: Chunk) {
        self.push(chunk);
    }

    /// Records a chunk and streams it now (after any held chunk, in order).
    pub async fn emit_now(&mut self, chunk: Chunk) {
        let nothing_held = self.unsent_from == self.unstored.len();
        self.push(chunk);
        if nothing_held {
            self.send_unsent().await;
        }
    }

    /// The unstored events were committed: send what was held back.
    pub async fn committed(&mut self) {
        self.send_unsent().await;
        self.unstored.clear();
        self.unsent_from = 0;
    }

    /// Forgets the held-back chunks (their commit failed): they are never
    /// sent, and their seqs are given out again.
    pub fn discard_held(&mut self) {
        let dropped = self.unstored.len() - self.unsent_from;
        self.unstored.truncate(self.unsent_from);
        self.last_seq -= dropped as u64;
    }

    async fn send_unsent(&mut self) {
        while self.unsent_from < self.unstored.len() {
            let event = self.unstored[self.unsent_from].clone();
            self.unsent_from += 1;
            if let Some(client) = &self.client {
                if client.send(event).await.is_err() {
                    // The client left; the run goes on and stays resumable.
                    tracing::debug!("client stream closed; continuing without it");
                    self.client = None;
                }
            }
        }
    }
}

impl ChunkSink for Emitter {
    async fn emit(&mut self, chunk: Chunk) {
        self.emit_now(chunk).await;
    }
}
