//! What a run listing asks the store for: filters and a keyset page. Plain
//! data shared by every backend; it never holds a backend's cursor, only the
//! id the next page starts below, so a page token survives restarts and
//! works on any replica.

use crate::run::{RunId, RunRecord, RunStatus};
use crate::tenant::Tenant;

/// Filters and page bounds of [`super::RunStore::list_runs`]. Runs come
/// newest first (run ids are UUIDv7, so id order is creation order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only runs of this tenant; `None` lists every tenant's (for the
    /// server's own bookkeeping, never for a caller).
    pub tenant: Option<Tenant>,
    /// Only runs in this status; `None` lists all.
    pub status: Option<RunStatus>,
    /// Only runs of this agent; `None` lists all.
    pub agent_id: Option<String>,
    /// Only runs older than this one (`id < before`): the last id of the
    /// previous page. `None` starts at the newest run.
    pub before: Option<RunId>,
    /// The most runs returned.
    pub limit: usize,
}

impl RunQuery {
    /// Whether `run` passes the filters and the page bound (not the limit).
    pub fn matches(&self, run: &RunRecord) -> bool {
        self.tenant.as_ref().is_none_or(|tenant| run.tenant == *tenant)
            && self.status.is_none_or(|status| run.status == status)
            && self.agent_id.as_deref().is_none_or(|agent| run.agent_id == agent)
            && self.before.is_none_or(|before| run.id < before)
    }
}
