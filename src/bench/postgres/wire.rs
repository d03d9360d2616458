//! A TCP relay in front of PostgreSQL that counts what a server asks of
//! it: statements (the frontend protocol's Execute and simple Query
//! messages) and round trips (each time a client sends again after the
//! database answered it, per connection). The bench points a second
//! instance of each server at it for a short counting pass, so that the
//! measured pass runs on a direct connection.
//!
//! Only message boundaries are read (a type byte and a length), never
//! their content; nothing here is on any server's path. No crate parses
//! the frontend side of the protocol, and a relay is a few lines of tokio.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the relay counted so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub statements: u64,
    pub round_trips: u64,
}

#[derive(Default)]
struct Counters {
    statements: AtomicU64,
    round_trips: AtomicU64,
}

/// A listening relay; it stops when dropped.
pub(crate) struct Relay {
    pub addr: SocketAddr,
    counters: Arc<Counters>,
    accept: JoinHandle<()>,
}

impl Relay {
    pub(crate) async fn start(upstream: String) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the PostgreSQL relay")?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let accept = {
            let counters = Arc::clone(&counters);
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let (counters, upstream) = (Arc::clone(&counters), upstream.clone());
                    tokio::spawn(async move {
                        if let Err(error) = relay(client, &upstream, counters).await {
                            tracing::debug!(%error, "a relayed PostgreSQL connection ended");
                        }
                    });
                }
            })
        };
        Ok(Self {
            addr,
            counters,
            accept,
        })
    }

    pub(crate) fn counts(&self) -> Counts {
        Counts {
            statements: self.counters.statements.load(Ordering::Relaxed),
            round_trips: self.counters.round_trips.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn relay(client: TcpStream, upstream: &str, counters: Arc<Counters>) -> anyhow::Result<()> {
    let server = TcpStream::connect(upstream)
        .await
        .with_context(|| format!("connecting to {upstream}"))?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    // Set when the database has sent something since the client last did.
    let answered = Arc::new(AtomicBool::new(true));
    let up = {
        let answered = Arc::clone(&answered);
        async move {
            let mut frames = Frames::default();
            copy(client_read, server_write, |bytes| {
                if answered.swap(false, Ordering::Relaxed) {
                    counters.round_trips.fetch_add(1, Ordering::Relaxed);
                }
                let statements = frames.feed(bytes);
                counters.statements.fetch_add(statements, Ordering::Relaxed);
            })
            .await
        }
    };
    let down = copy(server_read, client_write, |_| {
        answered.store(true, Ordering::Relaxed)
    });
    tokio::try_join!(up, down)?;
    Ok(())
}

async fn copy(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut seen: impl FnMut(&[u8]),
) -> std::io::Result<()> {
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = from.read(&mut buffer).await?;
        if read == 0 {
            return to.shutdown().await;
        }
        seen(&buffer[..read]);
        to.write_all(&buffer[..read]).await?;
    }
}

/// The SSLRequest and GSSENCRequest codes: startup-phase messages after
/// which the client sends another untyped message.
const NEGOTIATION_CODES: [u32; 2] = [80_877_103, 80_877_104];

/// Splits the frontend byte stream into messages: first the untyped
/// startup-phase messages (length, then a code), then typed ones (a type
/// byte, then a length that counts itself).
#[derive(Default)]
struct Frames {
    started: bool,
    header: Vec<u8>,
    skip: usize,
}

impl Frames {
    /// Feeds the next bytes; the statements among the messages they complete.
    fn feed(&mut self, mut bytes: &[u8]) -> u64 {
        let mut statements = 0;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let header_len = if self.started { 5 } else { 8 };
            let n = (header_len - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.header.len() < header_len {
                break;
            }
            let word = |at: usize| u32::from_be_bytes(self.header[at..at + 4].try_into().expect("4 bytes"));
            let total = if self.started {
                if matches!(self.header[0], b'E' | b'Q') {
                    statements += 1;
                }
                1 + word(1) as usize
            } else {
                if !NEGOTIATION_CODES.contains(&word(4)) {
                    self.started = true;
                }
                word(0) as usize
            };
            self.skip = total.saturating_sub(header_len);
            self.header.clear();
        }
        statements
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![kind];
        out.extend_from_slice(&(4 + body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn startup() -> Vec<u8> {
        let body = b"\0\x03\0\0user\0bench\0\0";
        let mut out = (4 + body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn counts_executes_and_simple_queries_across_any_split() {
        let mut stream = Vec::new();
        stream.extend_from_slice(&8u32.to_be_bytes());
        stream.extend_from_slice(&80_877_103u32.to_be_bytes());
        stream.extend(startup());
        stream.extend(message(b'p', b"password\0"));
        stream.extend(message(b'P', b"\0SELECT $1\0\0\0"));
        stream.extend(message(b'B', &[0; 12]));
        stream.extend(message(b'E', b"\0\0\0\0\0"));
        stream.extend(message(b'S', b""));
        stream.extend(message(b'Q', b"SELECT 1; SELECT 2\0"));
        stream.extend(message(b'E', b"\0\0\0\0\0"));
        for chunk in [1, 2, 3, 7, stream.len()] {
            let mut frames = Frames::default();
            let counted: u64 = stream.chunks(chunk).map(|bytes| frames.feed(bytes)).sum();
            assert_eq!(counted, 3, "split into pieces of {chunk}");
        }
    }

    #[tokio::test]
    async fn counts_a_round_trip_each_time_the_client_speaks_after_an_answer() {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream_addr = upstream.local_addr().unwrap();
        let echo = tokio::spawn(async move {
            let (mut socket, _) = upstream.accept().await.unwrap();
            let mut buffer = [0; 1024];
            loop {
                let n = socket.read(&mut buffer).await.unwrap();
                if n == 0 {
                    break;
                }
                socket.write_all(b"Z").await.unwrap();
            }
        });
        let relay = Relay::start(upstream_addr.to_string()).await.unwrap();
        let mut client = TcpStream::connect(relay.addr).await.unwrap();
        client.write_all(&startup()).await.unwrap();
        let mut answer = [0; 1];
        client.read_exact(&mut answer).await.unwrap();
        for _ in 0..3 {
            client.write_all(&message(b'Q', b"SELECT 1\0")).await.unwrap();
            client.read_exact(&mut answer).await.unwrap();
        }
        drop(client);
        echo.await.unwrap();
        assert_eq!(
            relay.counts(),
            Counts {
                statements: 3,
                round_trips: 4
            }
        );
    }
}
