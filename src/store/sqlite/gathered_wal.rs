//! The writer's VFS: the platform's own, except that the frames of the WAL
//! are gathered in memory and written with one `pwrite` per commit (per
//! 128 KiB of them), instead of two per frame (its header, then its page).
//! A group commit of the store changes about thirty pages, so this saves
//! some fifty system calls on each, with the file system's work per call.
//!
//! SQLite writes a commit's frames one after the other, syncs the WAL, and
//! only then publishes them in the WAL index, where other connections look
//! for pages. The gathered bytes are written before that sync, and before
//! any other use of the file that could see them missing (a read, a
//! truncation, its size, a file control, closing it): no reader and no sync
//! ever meets the file without them, and a crash before the sync loses only
//! what an unsynced commit may lose anyway. That argument needs every
//! commit to sync the WAL, so the store uses this VFS under `synchronous =
//! FULL` only (with NORMAL, frames are published without a sync).
//!
//! Every other file (the database, its journal, temporary files), and every
//! other method, is the platform's, untouched: the VFS places the
//! platform's file first in the memory SQLite gives it and its own state
//! after it, so that files it does not gather are plain platform files.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::mem::{align_of, size_of};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name connections open the VFS by.
pub(super) const NAME: &CStr = c"agentd-gathered-wal";

/// At most this many bytes wait; a longer run of frames (a large
/// transaction) is written in pieces of about this size. It is the most
/// the platform's file writes in one call: `os_unix.c` masks a length to
/// its low 17 bits.
const MAX_GATHERED: usize = 0x1ffff;

/// What a gathered WAL file keeps after the platform's file.
struct Gathered {
    /// The platform's methods for the file, which every call ends in.
    methods: *const ffi::sqlite3_io_methods,
    /// Bytes written but not yet passed on, from `offset` on.
    bytes: Vec<u8>,
    offset: i64,
}

/// The platform's VFS, which this one wraps.
struct Platform(*mut ffi::sqlite3_vfs);

// SAFETY: a registered VFS is immutable and lives as long as the process;
// SQLite calls it from any thread.
unsafe impl Send for Platform {}
unsafe impl Sync for Platform {}

static PLATFORM: OnceLock<Result<Platform, String>> = OnceLock::new();

/// Registers the VFS (once per process); its name, for opening.
pub(super) fn register() -> Result<&'static CStr, String> {
    let registered = PLATFORM.get_or_init(|| {
        // SAFETY: `sqlite3_vfs_find` initialises SQLite and returns the
        // default VFS or null; the copy is leaked, as SQLite requires a
        // registered VFS to outlive its use.
        unsafe {
            let platform = ffi::sqlite3_vfs_find(ptr::null());
            if platform.is_null() {
                return Err("SQLite has no default VFS".to_owned());
            }
            let mut vfs = *platform;
            vfs.pNext = ptr::null_mut();
            vfs.zName = NAME.as_ptr();
            vfs.szOsFile = c_int::try_from(state_offset(&*platform) + size_of::<Gathered>())
                .map_err(|_| "the platform's file is too large".to_owned())?;
            vfs.xOpen = Some(open);
            let rc = ffi::sqlite3_vfs_register(Box::leak(Box::new(vfs)), 0);
            if rc != ffi::SQLITE_OK {
                return Err(format!("registering the SQLite VFS failed ({rc})"));
            }
            Ok(Platform(platform))
        }
    });
    registered.as_ref().map(|_| NAME).map_err(Clone::clone)
}

/// Where a file's [`Gathered`] starts: after the platform's file, aligned.
fn state_offset(platform: &ffi::sqlite3_vfs) -> usize {
    let size = usize::try_from(platform.szOsFile).unwrap_or(0);
    size.next_multiple_of(align_of::<Gathered>())
}

/// Where `file`'s [`Gathered`] is (or goes).
///
/// # Safety
/// `file` must be memory this VFS was given for a file.
unsafe fn state_at(file: *mut ffi::sqlite3_file, platform: &ffi::sqlite3_vfs) -> *mut Gathered {
    file.cast::<u8>().add(state_offset(platform)).cast()
}

/// # Safety
/// `file` must be a file this VFS opened with its methods set to [`METHODS`].
unsafe fn state<'a>(file: *mut ffi::sqlite3_file) -> &'a mut Gathered {
    let Some(Ok(Platform(platform))) = PLATFORM.get() else {
        unreachable!("a gathered file exists only once the VFS is registered")
    };
    &mut *state_at(file, &**platform)
}

/// # Safety
/// As for [`state`].
unsafe fn platform_methods<'a>(file: *mut ffi::sqlite3_file) -> &'a ffi::sqlite3_io_methods {
    &*state(file).methods
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(Ok(Platform(platform))) = PLATFORM.get() else {
        return ffi::SQLITE_ERROR;
    };
    let Some(platform_open) = (**platform).xOpen else {
        return ffi::SQLITE_ERROR;
    };
    let rc = platform_open(*platform, name, file, flags, out_flags);
    if rc != ffi::SQLITE_OK || flags & ffi::SQLITE_OPEN_WAL == 0 {
        return rc;
    }
    let methods = (*file).pMethods;
    // Gather only in front of methods that have every call a file needs.
    if methods.is_null() || (*methods).iVersion < METHODS.iVersion || !complete(&*methods) {
        return rc;
    }
    state_at(file, &**platform).write(Gathered {
        methods,
        bytes: Vec::new(),
        offset: 0,
    });
    (*file).pMethods = &METHODS;
    rc
}

/// Whether `methods` has every call a WAL file gets.
fn complete(methods: &ffi::sqlite3_io_methods) -> bool {
    methods.xClose.is_some()
        && methods.xRead.is_some()
        && methods.xWrite.is_some()
        && methods.xTruncate.is_some()
        && methods.xSync.is_some()
        && methods.xFileSize.is_some()
        && methods.xLock.is_some()
        && methods.xUnlock.is_some()
        && methods.xCheckReservedLock.is_some()
        && methods.xFileControl.is_some()
        && methods.xSectorSize.is_some()
        && methods.xDeviceCharacteristics.is_some()
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

/// Passes the gathered bytes on to the platform's file, in one write.
///
/// # Safety
/// As for [`state`]; `gathered` is `file`'s.
unsafe fn pass_on(file: *mut ffi::sqlite3_file, gathered: &mut Gathered) -> c_int {
    if gathered.bytes.is_empty() {
        return ffi::SQLITE_OK;
    }
    let write = (*gathered.methods).xWrite.expect("checked at open");
    // At most MAX_GATHERED bytes: it fits.
    let len = gathered.bytes.len() as c_int;
    let rc = write(file, gathered.bytes.as_ptr().cast(), len, gathered.offset);
    gathered.bytes.clear();
    rc
}

/// Passes the gathered bytes on, then, unless that failed, makes `call` to
/// the platform's methods: for every use of the file that must find the
/// bytes there.
///
/// # Safety
/// As for [`state`].
unsafe fn passed_on(
    file: *mut ffi::sqlite3_file,
    call: impl FnOnce(&ffi::sqlite3_io_methods) -> c_int,
) -> c_int {
    let gathered = state(file);
    match pass_on(file, gathered) {
        ffi::SQLITE_OK => call(&*gathered.methods),
        rc => rc,
    }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    let gathered = state(file);
    let follows = !gathered.bytes.is_empty() && offset == gathered.offset + gathered.bytes.len() as i64;
    if !(follows && gathered.bytes.len() + len <= MAX_GATHERED) {
        let rc = pass_on(file, gathered);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if len > MAX_GATHERED {
            return (*gathered.methods).xWrite.expect("checked at open")(file, data, amount, offset);
        }
        gathered.offset = offset;
    }
    gathered
        .bytes
        .extend_from_slice(std::slice::from_raw_parts(data.cast::<u8>(), len));
    ffi::SQLITE_OK
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    let gathered = state(file);
    let passed = pass_on(file, gathered);
    let close = (*gathered.methods).xClose.expect("checked at open");
    ptr::drop_in_place(gathered);
    let closed = close(file);
    if passed != ffi::SQLITE_OK {
        passed
    } else {
        closed
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    data: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    passed_on(file, |platform| {
        platform.xRead.expect("checked at open")(file, data, amount, offset)
    })
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    passed_on(file, |platform| {
        platform.xTruncate.expect("checked at open")(file, size)
    })
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    passed_on(file, |platform| {
        platform.xSync.expect("checked at open")(file, flags)
    })
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    passed_on(file, |platform| {
        platform.xFileSize.expect("checked at open")(file, size)
    })
}

unsafe extern "C" fn file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    passed_on(file, |platform| {
        platform.xFileControl.expect("checked at open")(file, op, arg)
    })
}

unsafe extern "C" fn lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    platform_methods(file).xLock.expect("checked at open")(file, level)
}

unsafe extern "C" fn unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    platform_methods(file).xUnlock.expect("checked at open")(file, level)
}

unsafe extern "C" fn check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    platform_methods(file)
        .xCheckReservedLock
        .expect("checked at open")(file, out)
}

unsafe extern "C" fn sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    platform_methods(file).xSectorSize.expect("checked at open")(file)
}

unsafe extern "C" fn device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    platform_methods(file)
        .xDeviceCharacteristics
        .expect("checked at open")(file)
}

// The shared-memory methods belong to database files, and SQLite never
// calls them on a WAL (whose platform methods may not have them at all);
// passed on all the same where they exist.

unsafe extern "C" fn shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    match platform_methods(file).xShmMap {
        Some(shm_map) => shm_map(file, page, page_size, extend, out),
        None => ffi::SQLITE_IOERR_SHMMAP,
    }
}

unsafe extern "C" fn shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    match platform_methods(file).xShmLock {
        Some(shm_lock) => shm_lock(file, offset, n, flags),
        None => ffi::SQLITE_IOERR_SHMLOCK,
    }
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    if let Some(shm_barrier) = platform_methods(file).xShmBarrier {
        shm_barrier(file);
    }
}

unsafe extern "C" fn shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    match platform_methods(file).xShmUnmap {
        Some(shm_unmap) => shm_unmap(file, delete),
        None => ffi::SQLITE_OK,
    }
}

/// A WAL is read, not mapped: without the platform's `xFetch`, no page
/// comes back, and SQLite reads it instead.
unsafe extern "C" fn fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    passed_on(file, |platform| match platform.xFetch {
        Some(fetch) => fetch(file, offset, amount, out),
        None => {
            *out = ptr::null_mut();
            ffi::SQLITE_OK
        }
    })
}

unsafe extern "C" fn unfetch(file: *mut ffi::sqlite3_file, offset: i64, page: *mut c_void) -> c_int {
    match platform_methods(file).xUnfetch {
        Some(unfetch) => unfetch(file, offset, page),
        None => ffi::SQLITE_OK,
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::{params, Connection, OpenFlags};

    use super::*;

    /// Write system calls this thread has made (Linux's per-thread I/O
    /// accounting: other tests' threads do not count).
    fn writes_by_this_thread() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").expect("/proc/thread-self/io");
        io.lines()
            .find_map(|line| line.strip_prefix("syscw: "))
            .and_then(|count| count.trim().parse().ok())
            .expect("syscw")
    }

    fn open(path: &std::path::Path, gathered: bool) -> Connection {
        let conn = if gathered {
            let vfs = register().expect("register");
            Connection::open_with_flags_and_vfs(path, OpenFlags::default(), vfs)
        } else {
            Connection::open(path)
        }
        .expect("open");
        conn.pragma_update(None, "journal_mode", "WAL").expect("wal");
        conn.pragma_update(None, "synchronous", "FULL").expect("full");
        conn.execute_batch("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, value BLOB NOT NULL)")
            .expect("create");
        conn
    }

    /// A fresh database in a folder of its own, and its gathering writer.
    fn gathering_store() -> (tempfile::TempDir, std::path::PathBuf, Connection) {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("store.db");
        let writer = open(&path, true);
        (dir, path, writer)
    }

    /// Commits rows `ids` (about one page each), and returns the write
    /// system calls it took.
    fn commit_rows(conn: &mut Connection, ids: std::ops::Range<i64>, size: usize) -> u64 {
        let before = writes_by_this_thread();
        let tx = conn.transaction().expect("begin");
        for id in ids {
            tx.execute(
                "INSERT INTO t (id, value) VALUES (?1, ?2)",
                params![id, vec![id as u8; size]],
            )
            .expect("insert");
        }
        tx.commit().expect("commit");
        writes_by_this_thread() - before
    }

    fn rows(conn: &Connection) -> Vec<(i64, i64)> {
        conn.prepare("SELECT id, length(value) FROM t ORDER BY id")
            .and_then(|mut select| {
                select
                    .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                    .collect()
            })
            .expect("select")
    }

    #[test]
    fn a_commit_writes_its_frames_in_one_call() {
        let dir = tempfile::tempdir().expect("dir");
        let mut platform = open(&dir.path().join("platform.db"), false);
        let mut gathered = open(&dir.path().join("gathered.db"), true);
        // The first commit of each writes the WAL's header too.
        commit_rows(&mut platform, 0..1, 10);
        commit_rows(&mut gathered, 0..1, 10);

        // About 22 pages: under 128 KiB of frames.
        let by_platform = commit_rows(&mut platform, 1..21, 3000);
        let by_gathered = commit_rows(&mut gathered, 1..21, 3000);
        // Two calls per frame, one frame per page changed: at least 40.
        assert!(by_platform >= 40, "{by_platform} write calls without gathering");
        assert_eq!(
            by_gathered, 1,
            "write calls with gathering, against {by_platform}"
        );
    }

    #[test]
    fn other_connections_read_every_commit() {
        let (_dir, path, mut writer) = gathering_store();
        let reader = Connection::open(&path).expect("reader");
        let mut expected = Vec::new();
        for round in 0..20 {
            let ids = round * 10..round * 10 + 10;
            expected.extend(ids.clone().map(|id| (id, 2000)));
            commit_rows(&mut writer, ids, 2000);
            assert_eq!(rows(&reader), expected, "after commit {round}");
        }
        // A checkpoint reads the WAL back through the gathering file.
        writer
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get::<_, i64>(0))
            .expect("checkpoint");
        commit_rows(&mut writer, 1000..1010, 2000);
        expected.extend((1000..1010).map(|id| (id, 2000)));
        assert_eq!(rows(&reader), expected, "after a checkpoint");
        drop(writer);
        drop(reader);
        assert_eq!(
            rows(&Connection::open(&path).expect("reopen")),
            expected,
            "reopened"
        );
    }

    #[test]
    fn a_transaction_longer_than_the_gathering_limit_is_stored_whole() {
        let (_dir, path, mut writer) = gathering_store();
        // Twenty times the limit in one commit, and one value larger than it.
        let pages = (20 * MAX_GATHERED / 4096) as i64;
        commit_rows(&mut writer, 0..pages, 3000);
        commit_rows(&mut writer, pages..pages + 1, 2 * MAX_GATHERED);
        let mut expected: Vec<_> = (0..pages).map(|id| (id, 3000)).collect();
        expected.push((pages, 2 * MAX_GATHERED as i64));
        assert_eq!(rows(&writer), expected);
        drop(writer);
        // Read back from the WAL by a fresh connection, without a checkpoint
        // by the writer's close being relied upon.
        assert_eq!(rows(&Connection::open(&path).expect("reopen")), expected);
    }

    #[test]
    fn a_rolled_back_transaction_leaves_nothing() {
        let (_dir, path, mut writer) = gathering_store();
        commit_rows(&mut writer, 0..5, 100);
        // Enough to spill frames to the WAL before the rollback.
        writer.execute_batch("PRAGMA cache_size = 2").expect("cache");
        let tx = writer.transaction().expect("begin");
        for id in 5..200 {
            tx.execute(
                "INSERT INTO t (id, value) VALUES (?1, ?2)",
                params![id, vec![1u8; 3000]],
            )
            .expect("insert");
        }
        tx.rollback().expect("rollback");
        commit_rows(&mut writer, 5..7, 100);
        let expected: Vec<_> = (0..7).map(|id| (id, 100)).collect();
        assert_eq!(rows(&Connection::open(&path).expect("reader")), expected);
        drop(writer);
        assert_eq!(rows(&Connection::open(&path).expect("reopen")), expected);
    }
}
