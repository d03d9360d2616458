//! What a run listing asks the store for: filters and a keyset page. Plain
//! data shared by every backend; it never holds a backend's cursor, only the
//! id the next page starts below, so a page token survives restarts and
//! works on any replica.

use agentd_domain::{RunId, RunRecord, RunStatus, Tenant, Timestamp};

/// Filters and page bounds of [`super::RunQueries::list_runs`]. Runs come
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
    /// Only runs last changed after this time (`updated_at > t`); `None`
    /// lists all.
    pub updated_after: Option<Timestamp>,
    /// Only runs older than this one (`id < before`): the last id of the
    /// previous page. `None` starts at the newest run.
    pub before: Option<RunId>,
    /// The most runs returned.
    pub limit: usize,
}

impl RunQuery {
    /// The SQL backends' listing statement over `runs`, selecting
    /// `columns`: one statement per combination of filters set, so that
    /// each uses its own index (an `? IS NULL OR ...` condition would
    /// defeat them). Its parameters are the filters set, in the order
    /// tenant, status, agent id, `updated_after`, `before`, then the limit;
    /// `placeholder(n)` spells the `n`th (from 1) in the backend's SQL.
    pub(crate) fn sql(&self, columns: &str, placeholder: fn(usize) -> String) -> String {
        let (mut sql, bound) = self.filtered(&format!("SELECT {columns} FROM runs"), true, placeholder);
        sql.push_str(&format!(" ORDER BY id DESC LIMIT {}", placeholder(bound + 1)));
        sql
    }

    /// The SQL backends' count of the runs that pass the filters, every
    /// page of them (`before` and the limit left out): its parameters are
    /// the filters set, in the order of [`RunQuery::sql`].
    pub(crate) fn count_sql(&self, placeholder: fn(usize) -> String) -> String {
        self.filtered("SELECT count(*) FROM runs", false, placeholder).0
    }

    /// `select` with the filters set (with `before` when `paged`), and
    /// how many parameters they bind.
    fn filtered(&self, select: &str, paged: bool, placeholder: fn(usize) -> String) -> (String, usize) {
        let filters = [
            ("tenant =", self.tenant.is_some()),
            ("status =", self.status.is_some()),
            ("agent_id =", self.agent_id.is_some()),
            ("updated_at >", self.updated_after.is_some()),
            ("id <", paged && self.before.is_some()),
        ];
        let mut sql = select.to_owned();
        let mut bound = 0;
        for (condition, _) in filters.iter().filter(|(_, set)| *set) {
            bound += 1;
            sql.push_str(if bound == 1 { " WHERE " } else { " AND " });
            sql.push_str(&format!("{condition} {}", placeholder(bound)));
        }
        (sql, bound)
    }

    /// Whether `run` passes the filters and the page bound (not the limit).
    pub fn matches(&self, run: &RunRecord) -> bool {
        self.tenant.as_ref().is_none_or(|tenant| run.tenant == *tenant)
            && self.status.is_none_or(|status| run.status() == status)
            && self.agent_id.as_deref().is_none_or(|agent| run.agent_id == agent)
            && self.updated_after.is_none_or(|after| run.updated_at > after)
            && self.before.is_none_or(|before| run.id < before)
    }
}

/// The SQL backends' count of the runs in `status` by agent. The status is
/// spelled out, not bound: suspended runs (the gauge's) are counted from
/// their partial index alone; the others, which nothing counts on a
/// schedule, by a scan.
pub(crate) fn count_by_agent_sql(status: RunStatus) -> String {
    format!(
        "SELECT agent_id, count(*) FROM runs WHERE status = '{}' GROUP BY agent_id",
        status.as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_binds_the_filters_set_in_order_then_the_limit() {
        let all = RunQuery {
            tenant: Some(Tenant::default()),
            status: Some(RunStatus::Suspended),
            agent_id: Some("a".into()),
            updated_after: Some(Timestamp(7)),
            before: Some(RunId::new()),
            limit: 3,
        };
        assert_eq!(
            all.sql("id", |n| format!("${n}")),
            "SELECT id FROM runs WHERE tenant = $1 AND status = $2 AND agent_id = $3 \
             AND updated_at > $4 AND id < $5 ORDER BY id DESC LIMIT $6"
        );
        assert_eq!(
            all.count_sql(|n| format!("${n}")),
            "SELECT count(*) FROM runs WHERE tenant = $1 AND status = $2 AND agent_id = $3 \
             AND updated_at > $4"
        );
        let some = RunQuery {
            tenant: None,
            agent_id: None,
            updated_after: None,
            ..all
        };
        assert_eq!(
            some.sql("id", |n| format!("?{n}")),
            "SELECT id FROM runs WHERE status = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
        );
        assert_eq!(
            RunQuery::default().sql("id, version", |n| format!("?{n}")),
            "SELECT id, version FROM runs ORDER BY id DESC LIMIT ?1"
        );
    }
}
