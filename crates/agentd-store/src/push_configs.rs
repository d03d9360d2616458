//! A2A push notification configurations as the store keeps them: per task
//! (run), each under an id unique in its task, saying where the task's
//! updates are POSTed and with what credentials. The store never checks a
//! configuration's URL or tenant: the A2A layer does before it stores one.

use async_trait::async_trait;

use super::StoreError;
use agentd_domain::{RunId, Tenant, Timestamp};

/// The push notification configurations of runs; a run's go with it
/// ([`super::ThreadStore::delete_thread`]).
#[async_trait]
pub trait PushConfigStore: Send + Sync + 'static {
    /// Stores `config`, replacing the run's configuration of the same id.
    async fn put_push_config(&self, config: &PushConfig) -> Result<(), StoreError>;

    /// The configurations of the runs `run_ids`, by run and id: one read
    /// for all of them (the push ledger asks for a page of events' runs).
    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError>;

    /// Deletes run `run_id`'s configuration `id`: whether there was one.
    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError>;
}

/// One push notification configuration of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushConfig {
    pub run_id: RunId,
    /// Unique among the run's configurations.
    pub id: String,
    /// The run's tenant.
    pub tenant: Tenant,
    pub url: String,
    /// Sent as `X-A2A-Notification-Token` (empty: none).
    pub token: String,
    /// The `Authorization` scheme (empty: none) and its credentials.
    pub auth_scheme: String,
    pub auth_credentials: String,
    pub created_at: Timestamp,
}
