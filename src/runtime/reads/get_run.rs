//! GetRun, and the read every request about one run starts with: a run of
//! the asking tenant, another tenant's being not found exactly as a run
//! that does not exist.

use tracing::instrument;

use crate::domain::{RunId, RunRecord, Tenant};
use crate::runtime::{Inner, Runtime, RuntimeError};

impl Runtime {
    /// Reads a run of `tenant` (a suspended run past its time to live reads
    /// as expired); another tenant's run is not found.
    #[instrument(skip_all, fields(%tenant, run_id = %id))]
    pub(in crate::runtime) async fn read_run(
        &self,
        tenant: &Tenant,
        id: RunId,
    ) -> Result<RunRecord, RuntimeError> {
        let mut run = self.inner.load_run_of(tenant, id).await?;
        self.inner.expire_if_due(&mut run).await?;
        Ok(run)
    }
}

impl Inner {
    /// Reads a run of `tenant`: another tenant's run is not found, exactly
    /// as a run that does not exist.
    pub(in crate::runtime) async fn load_run_of(
        &self,
        tenant: &Tenant,
        id: RunId,
    ) -> Result<RunRecord, RuntimeError> {
        let run = self.store.runs.load_run(id).await?;
        if run.tenant != *tenant {
            return Err(RuntimeError::RunNotFound);
        }
        Ok(run)
    }
}
