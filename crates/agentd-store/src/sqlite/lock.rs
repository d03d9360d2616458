//! One process per SQLite store. The embedded store is single-process by
//! design (its writer thread is the only writer, and its server takes over
//! every run left running at startup as its own), so opening it takes an
//! exclusive lock on a file beside the database, `<database>.lock`, held
//! until the store is dropped (or the process dies: the kernel drops the
//! lock).
//! A second server on the same database is refused at start, with the
//! lock's path and the pid of its holder, which the file records. Several
//! replicas share a PostgreSQL store instead.
//!
//! The lock is the process's: a store opened again in the process that
//! holds it (a server restarted in place, while the old one's fenced
//! executions still hold their store) shares it, and it is released when
//! the last of them is dropped.

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::StoreError;

/// The lock on a store; released when the last clone is dropped.
#[derive(Clone, Debug)]
pub(super) struct StoreLock {
    _file: Arc<File>,
}

/// The locks this process holds, by lock file.
fn held() -> &'static Mutex<HashMap<PathBuf, Weak<File>>> {
    static HELD: OnceLock<Mutex<HashMap<PathBuf, Weak<File>>>> = OnceLock::new();
    HELD.get_or_init(Mutex::default)
}

/// The lock file of the database at `database`.
fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the lock on the store at `database` (or shares this process's),
/// or says who holds it.
pub(super) fn acquire(database: &Path) -> Result<StoreLock, StoreError> {
    let path = lock_path(database);
    // One key however the path is spelled: the folder exists by now.
    let key = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => dir
            .canonicalize()
            .map(|dir| dir.join(name))
            .unwrap_or_else(|_| path.clone()),
        _ => std::env::current_dir()
            .map(|dir| dir.join(&path))
            .unwrap_or_else(|_| path.clone()),
    };
    let mut held = held().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    held.retain(|_, file| file.strong_count() > 0);
    if let Some(file) = held.get(&key).and_then(Weak::upgrade) {
        return Ok(StoreLock { _file: file });
    }
    let file = Arc::new(lock_file(database, &path)?);
    held.insert(key, Arc::downgrade(&file));
    Ok(StoreLock { _file: file })
}

/// Opens and locks the lock file `path` of `database`, recording this
/// process's pid in it.
fn lock_file(database: &Path, path: &Path) -> Result<File, StoreError> {
    let failed =
        |e: std::io::Error| StoreError::Backend(format!("opening the lock file {}: {e}", path.display()));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(failed)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            // The holder may not have written its pid yet: then it is unknown.
            let _ = file.read_to_string(&mut holder);
            let holder = match holder.trim() {
                "" => "another process".to_owned(),
                pid => format!("another process (pid {pid})"),
            };
            return Err(StoreError::InUse(format!(
                "the SQLite store {} is in use by {holder}, which holds {}: one server per \
                 SQLite store; several replicas need a PostgreSQL store (--store postgres://...)",
                database.display(),
                path.display()
            )));
        }
        Err(TryLockError::Error(e)) => return Err(failed(e)),
    }
    let recorded = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()));
    recorded.map_err(failed)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_shared_in_its_process_and_released_with_its_last_holder() {
        let dir = tempfile::tempdir().expect("temp dir");
        let database = dir.path().join("agentd.sqlite3");
        let first = acquire(&database).expect("the first lock");
        let again = acquire(&dir.path().join(".").join("agentd.sqlite3")).expect("shared");
        let lock = lock_path(&database);
        // Another open file description, as another process would have.
        let other = File::open(&lock).expect("the lock file");
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        let recorded = std::fs::read_to_string(&lock).expect("read");
        assert_eq!(recorded.trim(), std::process::id().to_string());
        drop(first);
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(again);
        other.try_lock().expect("released with the last holder");
    }
}
