//! The SQLite store's read connections: opened on demand, kept for reuse,
//! and bounded in number, so that a burst of reads neither opens a
//! connection (each with its own page cache) per blocking thread nor keeps
//! them all afterwards. WAL lets them read beside the writer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use super::backend;
use crate::StoreError;

/// Reads running at once, at most. Each is a short indexed query; more than
/// the cores could run gains nothing and costs a connection each.
const MAX_READERS: usize = 3;

/// Page cache of each read connection, in KiB (SQLite's default is about
/// 2 MiB):
/// reads are point lookups and short range scans, and the operating
/// system's page cache holds the rest of the file anyway.
const READER_CACHE_KIB: i64 = 512;

/// Read-only connections, opened on demand and kept for reuse.
pub(super) struct ReaderPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

/// A read-only connection to the database at `path`.
pub(super) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(backend)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(backend)?;
    Ok(conn)
}

impl ReaderPool {
    pub(super) fn new(path: PathBuf) -> Self {
        Self {
            path,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(MAX_READERS)),
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `query` on a pooled connection on the blocking thread pool,
    /// once one of the [`MAX_READERS`] places is free.
    pub(super) async fn read<T: Send + 'static>(
        self: &Arc<Self>,
        query: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Backend("the reader pool is closed".into()))?;
        let readers = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let result = readers.with(query);
            drop(permit);
            result
        })
        .await
        .map_err(|e| StoreError::Backend(format!("read task failed: {e}")))?
    }

    fn with<T>(&self, query: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => self.open()?,
        };
        let result = query(&conn);
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
        result
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let conn = open_reader(&self.path)?;
        conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)
            .map_err(backend)?;
        super::stable_plans(&conn).map_err(backend)?;
        Ok(conn)
    }
}
