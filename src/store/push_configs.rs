//! A2A push notification configurations as the store keeps them: per task
//! (run), each under an id unique in its task, saying where the task's
//! updates are POSTed and with what credentials. The store never checks a
//! configuration's URL or tenant: the A2A layer does before it stores one.

use crate::domain::{RunId, Tenant, Timestamp};

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
