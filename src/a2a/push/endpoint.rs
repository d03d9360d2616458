//! The A2A push endpoint of the delivery ledger `a2a:push`: each run event
//! of a task with push configurations becomes one delivery per
//! configuration stored by the time of the event (the delivery's target is
//! the configuration as it was when the event was enqueued; a
//! configuration gets the task's updates from when it was stored on, even
//! when the ledger reads the earlier ones after that), POSTed as the A2A
//! specification says: the
//! `StreamResponse` in proto JSON (a `statusUpdate`), the configuration's
//! token in `X-A2A-Notification-Token`, its authentication as
//! `Authorization`. Retries, leases and order per task and configuration
//! are the ledger's, as for webhooks.

use std::collections::HashMap;
use std::time::Duration;

use a2a_pb::proto;
use async_trait::async_trait;
use prost::Message;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use serde::{Deserialize, Serialize};

use crate::a2a::task;
use crate::domain::{RunEvent, RunId, RunRecord, Tenant, Timestamp};
use crate::grpc::convert::timestamp;
use crate::outbound::AddressPolicy;
use crate::runtime::{
    ClaimedDelivery, Endpoint, LedgerReads, NewDelivery, PushConfig, RetrySchedule, RuntimeError,
};

/// The ledger's name.
pub(super) const LEDGER: &str = "a2a:push";
/// How long one POST may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// POSTs in flight at once, per replica.
const CONCURRENCY: usize = 16;

/// Where one delivery goes: a configuration, as its delivery's target.
#[derive(Debug, Serialize, Deserialize)]
struct Target {
    id: String,
    url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    token: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    scheme: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    credentials: String,
}

impl Target {
    fn of(config: &PushConfig) -> Self {
        Self {
            id: config.id.clone(),
            url: config.url.clone(),
            token: config.token.clone(),
            scheme: config.auth_scheme.clone(),
            credentials: config.auth_credentials.clone(),
        }
    }
}

pub(super) struct PushEndpoint {
    /// Where pushes may go; the client is this policy's.
    pub policy: AddressPolicy,
    pub retry: RetrySchedule,
}

#[async_trait]
impl Endpoint for PushEndpoint {
    fn name(&self) -> &str {
        LEDGER
    }

    fn tenant(&self) -> Option<&Tenant> {
        None
    }

    fn timeout(&self) -> Duration {
        TIMEOUT
    }

    fn concurrency(&self) -> usize {
        CONCURRENCY
    }

    fn retry(&self) -> &RetrySchedule {
        &self.retry
    }

    async fn deliveries(
        &self,
        reads: &LedgerReads<'_>,
        events: &[RunEvent],
    ) -> Result<Vec<NewDelivery>, RuntimeError> {
        // The configurations of the page's runs, in one read; each run's
        // own tenant's only.
        let tenants: HashMap<RunId, &Tenant> =
            events.iter().map(|event| (event.run_id, &event.tenant)).collect();
        let run_ids: Vec<RunId> = tenants.keys().copied().collect();
        let mut targets: HashMap<RunId, Vec<(Timestamp, String)>> = HashMap::new();
        for config in reads.push_configs(&run_ids).await? {
            if tenants.get(&config.run_id) != Some(&&config.tenant) {
                continue;
            }
            if let Ok(target) = serde_json::to_string(&Target::of(&config)) {
                targets
                    .entry(config.run_id)
                    .or_default()
                    .push((config.created_at, target));
            }
        }
        let mut deliveries = Vec::new();
        for event in events {
            let Some(targets) = targets.get(&event.run_id) else {
                continue;
            };
            // Not the updates from before a configuration was stored.
            let stored_by_then = targets.iter().filter(|(created_at, _)| *created_at <= event.time);
            for (_, target) in stored_by_then {
                deliveries.push(NewDelivery {
                    run_id: event.run_id,
                    event: event.position,
                    target: target.clone(),
                });
            }
        }
        Ok(deliveries)
    }

    async fn request(
        &self,
        client: &reqwest::Client,
        reads: &LedgerReads<'_>,
        delivery: &ClaimedDelivery,
    ) -> Result<reqwest::RequestBuilder, String> {
        let target: Target =
            serde_json::from_str(&delivery.target).map_err(|error| format!("reading the target: {error}"))?;
        let run = reads
            .run(delivery.event.run_id)
            .await
            .map_err(|error| format!("reading the task: {error}"))?;
        let body = body(&update(&run, &delivery.event))?;
        // Checked again where it connects: a literal address here, a
        // name by the client's resolver.
        let mut request = self
            .policy
            .request(client, reqwest::Method::POST, &target.url)?
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        if !target.token.is_empty() {
            request = request.header("X-A2A-Notification-Token", &target.token);
        }
        if !target.scheme.is_empty() {
            request = request.header(AUTHORIZATION, format!("{} {}", target.scheme, target.credentials));
        }
        Ok(request)
    }
}

/// The status update that `event` of `run` is.
pub(super) fn update(run: &RunRecord, event: &RunEvent) -> proto::StreamResponse {
    let message = if event.kind.lists_pending() {
        Some(task::input_required_message(run, &event.pending))
    } else if run.status() == event.status {
        task::status(run).message
    } else {
        None
    };
    let status = proto::TaskStatus {
        state: task::state_of(event.status) as i32,
        message,
        timestamp: Some(timestamp(event.time)),
    };
    task::stream_response(proto::stream_response::Payload::StatusUpdate(
        proto::TaskStatusUpdateEvent {
            task_id: run.id.to_string(),
            context_id: task::context_of(run),
            status: Some(status),
            metadata: None,
        },
    ))
}

/// `response` in proto JSON.
pub(super) fn body(response: &proto::StreamResponse) -> Result<Vec<u8>, String> {
    let json = a2a_pb::protojson::StreamResponse::decode(response.encode_to_vec().as_slice())
        .map_err(|error| format!("re-reading the update: {error}"))?;
    serde_json::to_vec(&json).map_err(|error| format!("writing the update as JSON: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventPosition, RunEventKind, RunStatus};
    use crate::store::{MemoryStore, PushConfigStore};

    fn config(run_id: RunId, id: &str, created_at: i64) -> PushConfig {
        PushConfig {
            run_id,
            id: id.into(),
            tenant: Tenant::default(),
            url: format!("https://example.com/{id}"),
            token: String::new(),
            auth_scheme: String::new(),
            auth_credentials: String::new(),
            created_at: Timestamp(created_at),
        }
    }

    fn event(run_id: RunId, minor: i64, time: i64, kind: RunEventKind, status: RunStatus) -> RunEvent {
        RunEvent {
            position: EventPosition { major: 1, minor },
            time: Timestamp(time),
            kind,
            tenant: Tenant::default(),
            run_id,
            agent_id: "assistant".into(),
            thread_id: None,
            status,
            pending: Vec::new(),
            expires_at: None,
            decisions: Vec::new(),
        }
    }

    /// A configuration stored while its task waits gets the updates from
    /// then on, not the ones before it, even when the ledger reads those
    /// only after it was stored.
    #[tokio::test]
    async fn a_configuration_gets_the_updates_from_when_it_was_stored() {
        let store = MemoryStore::default();
        let run_id = RunId::new();
        store
            .put_push_config(&config(run_id, "first", 100))
            .await
            .unwrap();
        store
            .put_push_config(&config(run_id, "second", 300))
            .await
            .unwrap();
        let events = [
            event(run_id, 1, 100, RunEventKind::Started, RunStatus::Running),
            event(run_id, 2, 200, RunEventKind::Suspended, RunStatus::Suspended),
            event(run_id, 3, 400, RunEventKind::Resumed, RunStatus::Running),
        ];
        let endpoint = PushEndpoint {
            policy: super::super::policy(false),
            retry: RetrySchedule::default(),
        };
        let reads = LedgerReads::new(&store, &store);
        let deliveries = endpoint.deliveries(&reads, &events).await.unwrap();
        let sent: Vec<(i64, String)> = deliveries
            .iter()
            .map(|delivery| {
                let target: Target = serde_json::from_str(&delivery.target).unwrap();
                (delivery.event.minor, target.id)
            })
            .collect();
        assert_eq!(
            sent,
            [
                (1, "first".to_owned()),
                (2, "first".to_owned()),
                (3, "first".to_owned()),
                (3, "second".to_owned()),
            ]
        );
    }
}
