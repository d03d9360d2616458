//! Reading a stored run back: the record of its last commit (see
//! `encoding.rs`), with the columns that appends move since (version,
//! `last_seq`, the lease's expiry) laid over it. Shared by the SQL
//! backends, which keep both.

use super::StoreError;
use crate::run::RunRecord;
use crate::time::Timestamp;

/// The record of a run row.
pub(crate) fn overlay(
    record: &[u8],
    version: i64,
    last_seq: i64,
    lease_expires_at: Option<i64>,
) -> Result<RunRecord, StoreError> {
    let corrupt = |e: &dyn std::fmt::Display| StoreError::Corrupt(e.to_string());
    let mut run: RunRecord = super::encoding::decode(record)?;
    run.version = u64::try_from(version).map_err(|e| corrupt(&e))?;
    run.last_seq = u64::try_from(last_seq).map_err(|e| corrupt(&e))?;
    if let (Some(lease), Some(at)) = (run.lease.as_mut(), lease_expires_at) {
        lease.expires_at = Timestamp(at);
    }
    Ok(run)
}
