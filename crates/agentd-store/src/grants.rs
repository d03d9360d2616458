//! Grants as the store keeps them (see [`agentd_domain::Grant`]): one row
//! each, found by the run or thread they hold in, deleted by id. A
//! thread's grants go with it ([`super::ThreadStore::delete_thread`]). The
//! store never decides what a grant covers: the runtime does.

use async_trait::async_trait;

use super::StoreError;
use agentd_domain::{Grant, RunId, Tenant, ThreadId};

/// The grants of every tenant.
#[async_trait]
pub trait GrantStore: Send + Sync + 'static {
    /// Stores a new grant.
    async fn put_grant(&self, grant: &Grant) -> Result<(), StoreError>;

    /// `tenant`'s grants of scope `Run` made in run `run`, and of scope
    /// `Thread` made in thread `thread`, oldest first, expired ones too.
    async fn grants(
        &self,
        tenant: &Tenant,
        run: Option<RunId>,
        thread: Option<&ThreadId>,
    ) -> Result<Vec<Grant>, StoreError>;

    /// Deletes `tenant`'s grant `id`: whether there was one.
    async fn delete_grant(&self, tenant: &Tenant, id: &str) -> Result<bool, StoreError>;
}
