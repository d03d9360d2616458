//! A2A push notification configurations, per run and tenant: kept in the
//! store beside the run (and deleted with it), never read by the run
//! itself. A configuration of another tenant's run is not found, as the run
//! is.

use crate::domain::{RunId, Tenant};
use crate::store::PushConfig;

use super::{Runtime, RuntimeError};

impl Runtime {
    /// A configuration may be stored before its run: with the request that
    /// starts it, so that its first update is pushed too.
    pub(super) async fn store_push_config(&self, config: &PushConfig) -> Result<(), RuntimeError> {
        Ok(self.inner.store.push_configs.put_push_config(config).await?)
    }

    pub(super) async fn read_push_configs(
        &self,
        tenant: &Tenant,
        id: RunId,
    ) -> Result<Vec<PushConfig>, RuntimeError> {
        let mut configs = self.inner.store.push_configs.push_configs(&[id]).await?;
        configs.retain(|config| config.tenant == *tenant);
        Ok(configs)
    }

    pub(super) async fn remove_push_config(
        &self,
        tenant: &Tenant,
        id: RunId,
        config_id: &str,
    ) -> Result<bool, RuntimeError> {
        let stored = self.read_push_configs(tenant, id).await?;
        if !stored.iter().any(|config| config.id == config_id) {
            return Ok(false);
        }
        Ok(self
            .inner
            .store
            .push_configs
            .delete_push_config(id, config_id)
            .await?)
    }
}
