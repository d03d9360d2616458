//! The ceiling service's store: one small row per RPC into SQLite in WAL
//! mode, written by a single writer thread that commits every write waiting
//! in one transaction (group commit, as agentd's store does), or each write
//! in its own transaction when asked to be naive.

use std::path::Path;

use anyhow::Context;
use rusqlite::{params, Connection};
use tokio::sync::{mpsc, oneshot};

use crate::bench::args::SyncMode;

/// The most writes committed in one transaction (agentd's store uses the same).
const MAX_BATCH: usize = 512;

struct Write {
    run_id: String,
    kind: i64,
    body: Vec<u8>,
    done: oneshot::Sender<Result<(), String>>,
}

#[derive(Clone)]
pub struct CeilingStore {
    writes: mpsc::UnboundedSender<Write>,
}

impl CeilingStore {
    pub fn open(path: &Path, sync: SyncMode, naive: bool) -> anyhow::Result<Self> {
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", sync.as_str())?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS writes (\
               run_id TEXT NOT NULL, kind INTEGER NOT NULL, time INTEGER NOT NULL, body BLOB NOT NULL)",
        )?;
        let (writes, queue) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("ceiling-writer".into())
            .spawn(move || write_loop(conn, queue, naive))
            .context("starting the writer thread")?;
        Ok(Self { writes })
    }

    /// Stores one row and waits until it is committed.
    pub async fn write(&self, run_id: &str, kind: i64, body: Vec<u8>) -> Result<(), String> {
        let (done, committed) = oneshot::channel();
        let write = Write {
            run_id: run_id.to_owned(),
            kind,
            body,
            done,
        };
        self.writes
            .send(write)
            .map_err(|_| "the writer thread has stopped".to_owned())?;
        committed
            .await
            .map_err(|_| "the writer thread has stopped".to_owned())?
    }
}

fn write_loop(mut conn: Connection, mut queue: mpsc::UnboundedReceiver<Write>, naive: bool) {
    let limit = if naive { 1 } else { MAX_BATCH };
    let mut batch = Vec::with_capacity(limit);
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < limit {
            match queue.try_recv() {
                Ok(write) => batch.push(write),
                Err(_) => break,
            }
        }
        let outcome = commit(&mut conn, &batch).map_err(|e| e.to_string());
        for write in batch.drain(..) {
            let _ = write.done.send(outcome.clone());
        }
    }
}

fn commit(conn: &mut Connection, batch: &[Write]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    {
        let mut insert =
            tx.prepare_cached("INSERT INTO writes (run_id, kind, time, body) VALUES (?1, ?2, ?3, ?4)")?;
        let now = agentd::domain::Timestamp::now().0;
        for write in batch {
            insert.execute(params![write.run_id, write.kind, now, write.body])?;
        }
    }
    tx.commit()
}
