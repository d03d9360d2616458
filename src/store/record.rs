//! Reading a stored run back: the record of its last commit (see
//! `encoding.rs`), with the columns that appends move since (version,
//! `last_seq`, the lease's expiry) laid over it; and a thread from its
//! row joined with its latest run's. Shared by the SQL backends.

use super::{corrupt, StoreError};
use crate::domain::{LatestRun, RunId, RunRecord, RunStatus, Tenant, ThreadId, ThreadRecord, Timestamp};

/// The columns a record read selects, in this order: the record of the
/// last commit, then what appends moved since (see [`overlay`]).
pub(crate) const RECORD_COLUMNS: &str = "record, version, last_seq, lease_expires_at";

/// The record of a run row.
pub(crate) fn overlay(
    record: &[u8],
    version: i64,
    last_seq: i64,
    lease_expires_at: Option<i64>,
) -> Result<RunRecord, StoreError> {
    let mut run: RunRecord = super::encoding::decode(record)?;
    run.version = u64::try_from(version).map_err(corrupt)?;
    run.last_seq = u64::try_from(last_seq).map_err(corrupt)?;
    if let (Some(lease), Some(at)) = (run.lease.as_mut(), lease_expires_at) {
        lease.expires_at = Timestamp(at);
    }
    Ok(run)
}

/// A thread's key as stored: its tenant and its id.
pub(crate) fn thread_key(tenant: &str, id: &str) -> Result<(Tenant, ThreadId), StoreError> {
    Ok((
        Tenant::new(tenant).map_err(corrupt)?,
        ThreadId::new(id).map_err(corrupt)?,
    ))
}

/// A thread row, with its latest run's status and last change (`None`
/// when that run is gone).
pub(crate) fn thread(
    (tenant, id): (&str, &str),
    created_at: i64,
    updated_at: i64,
    latest_run: RunId,
    latest: Option<(&str, i64)>,
) -> Result<ThreadRecord, StoreError> {
    let latest = match latest {
        Some((status, at)) => Some(LatestRun {
            status: RunStatus::parse(status).ok_or_else(|| corrupt(format!("run status {status:?}")))?,
            updated_at: Timestamp(at),
        }),
        None => None,
    };
    let (tenant, id) = thread_key(tenant, id)?;
    Ok(ThreadRecord {
        tenant,
        id,
        created_at: Timestamp(created_at),
        updated_at: Timestamp(updated_at),
        latest_run,
        latest,
    })
}
