//! A2A push notification configurations: their RPCs' logic (a task's
//! configurations, stored per run and tenant; another tenant's or an
//! unknown task is TASK_NOT_FOUND), and their delivery through the
//! durable ledger `a2a:push` (`endpoint.rs`) to URLs that the outbound
//! address policy lets through (`crate::outbound`). It never changes a run.

mod endpoint;

use std::sync::Arc;

use a2a_pb::proto;
use tonic::Status;

use crate::domain::{RunId, RunRecord, Tenant, Timestamp};
use crate::grpc::convert::invalid;
use crate::outbound::AddressPolicy;
use crate::runtime::{DeliveryStartError, DeliveryTasks, PushConfig, RetrySchedule, Runtime};

/// The most configurations a task may have.
const MAX_CONFIGS: usize = 20;
/// The page size of ListTaskPushNotificationConfigs without one.
const DEFAULT_PAGE: usize = 20;

/// Starts delivering push notifications into `tasks` (see `endpoint.rs`).
pub(crate) async fn spawn(
    runtime: &Runtime,
    allow_private: bool,
    tasks: &mut DeliveryTasks,
) -> Result<(), DeliveryStartError> {
    let policy = policy(allow_private);
    let builder = crate::http_client::builder().user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")));
    let client = policy
        .client(builder)
        .map_err(|error| DeliveryStartError::new(format!("A2A push: building the HTTP client: {error}")))?;
    let endpoint = endpoint::PushEndpoint {
        policy,
        retry: RetrySchedule::default(),
    };
    runtime.deliver(tasks, Arc::new(endpoint), client).await
}

/// Where pushes may go: global addresses only, unless the operator's
/// `[a2a] push_allow_private` allows internal ones.
fn policy(allow_private: bool) -> AddressPolicy {
    AddressPolicy::new(allow_private, "[a2a] push_allow_private")
}

fn bad(field: &'static str, reason: impl std::fmt::Display) -> Status {
    Status::from(invalid(field, reason.to_string()))
}

/// `request` checked and made a configuration of run `run_id` of `tenant`.
pub(crate) async fn new_config(
    run_id: RunId,
    tenant: &Tenant,
    request: proto::TaskPushNotificationConfig,
    allow_private: bool,
) -> Result<PushConfig, Status> {
    let proto::TaskPushNotificationConfig {
        tenant: _,
        id,
        task_id: _,
        url,
        token,
        authentication,
    } = request;
    policy(allow_private)
        .check_now(&url)
        .await
        .map_err(|reason| bad("url", reason))?;
    if id.len() > 128 || id.chars().any(char::is_control) {
        return Err(bad(
            "id",
            "at most 128 characters, none of them control characters",
        ));
    }
    let (auth_scheme, auth_credentials) = authentication
        .map(|auth| (auth.scheme, auth.credentials))
        .unwrap_or_default();
    if auth_scheme.contains(char::is_whitespace) || auth_credentials.contains(['\r', '\n']) {
        return Err(bad(
            "authentication",
            "the scheme is one word and the credentials one line",
        ));
    }
    if token.contains(['\r', '\n']) {
        return Err(bad("token", "the token is one line"));
    }
    Ok(PushConfig {
        run_id,
        id: if id.is_empty() {
            uuid::Uuid::now_v7().to_string()
        } else {
            id
        },
        tenant: tenant.clone(),
        url,
        token,
        auth_scheme,
        auth_credentials,
        created_at: Timestamp::now(),
    })
}

/// Stores `config`, unless its task has too many already.
pub(crate) async fn store(runtime: &Runtime, config: &PushConfig) -> Result<(), Status> {
    let existing = runtime
        .push_configs(&config.tenant, config.run_id)
        .await
        .map_err(Status::from)?;
    if existing.len() >= MAX_CONFIGS && !existing.iter().any(|stored| stored.id == config.id) {
        return Err(bad(
            "id",
            format!("a task has at most {MAX_CONFIGS} push notification configs"),
        ));
    }
    runtime.put_push_config(config).await.map_err(Status::from)
}

/// `config` as A2A spells it, for the A2A tenant `a2a_tenant`.
pub(crate) fn to_proto(config: &PushConfig, a2a_tenant: &str) -> proto::TaskPushNotificationConfig {
    proto::TaskPushNotificationConfig {
        tenant: a2a_tenant.to_owned(),
        id: config.id.clone(),
        task_id: config.run_id.to_string(),
        url: config.url.clone(),
        token: config.token.clone(),
        authentication: (!config.auth_scheme.is_empty()).then(|| proto::AuthenticationInfo {
            scheme: config.auth_scheme.clone(),
            credentials: config.auth_credentials.clone(),
        }),
    }
}

pub(crate) fn config_not_found(task_id: &str, id: &str) -> Status {
    Status::not_found(format!("task {task_id} has no push notification config {id:?}"))
}

/// Run `run`'s configuration `id`.
pub(crate) async fn get(runtime: &Runtime, run: &RunRecord, id: &str) -> Result<PushConfig, Status> {
    runtime
        .push_configs(&run.tenant, run.id)
        .await
        .map_err(Status::from)?
        .into_iter()
        .find(|config| config.id == id)
        .ok_or_else(|| config_not_found(&run.id.to_string(), id))
}

/// One page of `run`'s configurations, by id: after `page_token` (the
/// last id of the previous page), and the next page's token.
pub(crate) async fn list(
    runtime: &Runtime,
    run: &RunRecord,
    page_size: i32,
    page_token: &str,
) -> Result<(Vec<PushConfig>, String), Status> {
    if page_size < 0 {
        return Err(bad("page_size", "must not be negative"));
    }
    let size = match usize::try_from(page_size) {
        Ok(0) | Err(_) => DEFAULT_PAGE,
        Ok(size) => size.min(100),
    };
    let mut configs: Vec<PushConfig> = runtime
        .push_configs(&run.tenant, run.id)
        .await
        .map_err(Status::from)?
        .into_iter()
        .filter(|config| page_token.is_empty() || config.id.as_str() > page_token)
        .collect();
    let more = configs.len() > size;
    configs.truncate(size);
    let next = if more {
        configs.last().map(|config| config.id.clone()).unwrap_or_default()
    } else {
        String::new()
    };
    Ok((configs, next))
}

/// Deletes `run`'s configuration `id`; NOT_FOUND without it.
pub(crate) async fn delete(runtime: &Runtime, run: &RunRecord, id: &str) -> Result<(), Status> {
    match runtime
        .delete_push_config(&run.tenant, run.id, id)
        .await
        .map_err(Status::from)?
    {
        true => Ok(()),
        false => Err(config_not_found(&run.id.to_string(), id)),
    }
}
