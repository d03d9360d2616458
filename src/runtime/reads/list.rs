//! ListRuns: one page of runs, newest first, filtered by status and agent.
//! Pages are keyset pages (the next one starts below the last run id of
//! this one), so runs started between page reads never shift or repeat the
//! older ones. Runs are listed as stored: a suspended run past its time to
//! live stays SUSPENDED here until the expiry sweep (or a GetRun or Resume)
//! marks it EXPIRED. Never writes.

use tracing::instrument;

use crate::domain::{RunId, RunRecord, RunStatus, Tenant, Timestamp};
use crate::runtime::{Runtime, RuntimeError};
use crate::store::RunQuery;

/// The page size when the request asks for none.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest page; a larger request gets this many.
pub const MAX_PAGE_SIZE: usize = 500;

/// A request for one page of runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListRuns {
    /// Only runs in this status; `None` lists all.
    pub status: Option<RunStatus>,
    /// Only runs of this agent; `None` lists all.
    pub agent_id: Option<String>,
    /// Only runs last changed after this time; `None` lists all.
    pub updated_after: Option<Timestamp>,
    /// Runs per page: 0 takes [`DEFAULT_PAGE_SIZE`], more than
    /// [`MAX_PAGE_SIZE`] takes that.
    pub page_size: u32,
    /// Only runs older than this one: the previous page's [`RunPage::next`].
    pub before: Option<RunId>,
}

/// One page of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct RunPage {
    /// Newest first.
    pub runs: Vec<RunRecord>,
    /// Where the next page starts (`ListRuns::before`); `None` on the last.
    pub next: Option<RunId>,
}

/// The number of runs a page holds for a requested `page_size`.
pub(super) fn effective_page_size(page_size: u32) -> usize {
    match usize::try_from(page_size) {
        Ok(0) => DEFAULT_PAGE_SIZE,
        Ok(size) => size.min(MAX_PAGE_SIZE),
        Err(_) => MAX_PAGE_SIZE,
    }
}

impl Runtime {
    /// Lists one page of `tenant`'s runs (never another tenant's).
    #[instrument(skip_all, fields(%tenant, status = ?request.status, agent = ?request.agent_id))]
    pub(in crate::runtime) async fn list_run_page(
        &self,
        tenant: &Tenant,
        request: ListRuns,
    ) -> Result<RunPage, RuntimeError> {
        let page_size = effective_page_size(request.page_size);
        // One run more than the page holds tells whether another page follows.
        let query = RunQuery {
            tenant: Some(tenant.clone()),
            status: request.status,
            agent_id: request.agent_id,
            updated_after: request.updated_after,
            before: request.before,
            limit: page_size + 1,
        };
        let mut runs = self.inner.store.queries.list_runs(&query).await?;
        let next = if runs.len() > page_size {
            runs.truncate(page_size);
            runs.last().map(|run| run.id)
        } else {
            None
        };
        Ok(RunPage { runs, next })
    }

    /// How many of `tenant`'s runs pass `request`'s filters, on every page
    /// (its page bounds are left out).
    #[instrument(skip_all, fields(%tenant, status = ?request.status, agent = ?request.agent_id))]
    pub(in crate::runtime) async fn count_matching_runs(
        &self,
        tenant: &Tenant,
        request: &ListRuns,
    ) -> Result<u64, RuntimeError> {
        let query = RunQuery {
            tenant: Some(tenant.clone()),
            status: request.status,
            agent_id: request.agent_id.clone(),
            updated_after: request.updated_after,
            before: None,
            limit: 0,
        };
        Ok(self.inner.store.queries.count_runs(&query).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes_default_and_clamp() {
        assert_eq!(effective_page_size(0), DEFAULT_PAGE_SIZE);
        assert_eq!(effective_page_size(1), 1);
        assert_eq!(effective_page_size(500), 500);
        assert_eq!(effective_page_size(501), MAX_PAGE_SIZE);
        assert_eq!(effective_page_size(u32::MAX), MAX_PAGE_SIZE);
    }
}
