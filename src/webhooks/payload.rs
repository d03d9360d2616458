//! What a webhook request carries: the event type (`run.suspended`), the
//! message id (`webhook-id`, the same for every attempt at one event), and
//! the body, `{"type", "timestamp", "data"}` with `data` the event as the
//! proto `agentd.v1.RunEvent` in the proto3 JSON mapping, written from the
//! descriptors compiled into the binary (the same shape WatchRuns clients
//! and grpcurl see). The body is made from the stored event alone, so
//! every attempt at one event sends the same bytes.

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, SerializeOptions};
use serde::Serialize;

use crate::domain::{RunEvent, RunEventKind};
use crate::grpc::convert::{run_event_to_proto, timestamp};
use crate::pb;

/// The `type` of each kind of event, as webhooks name them (and their
/// `events` filter takes them).
pub(crate) fn event_type(kind: RunEventKind) -> &'static str {
    match kind {
        RunEventKind::Started => "run.started",
        RunEventKind::Suspended => "run.suspended",
        RunEventKind::Resumed => "run.resumed",
        RunEventKind::Completed => "run.completed",
        RunEventKind::Failed => "run.failed",
        RunEventKind::Cancelled => "run.cancelled",
        RunEventKind::Expired => "run.expired",
        RunEventKind::Reminded => "run.reminded",
    }
}

/// The kind a `type` names, if any.
pub(super) fn parse_event_type(text: &str) -> Option<RunEventKind> {
    RunEventKind::ALL
        .into_iter()
        .find(|kind| event_type(*kind) == text)
}

/// The `webhook-id` of `event`: its run and its position in the store,
/// so the same at every attempt and across replicas, and different for
/// every event. Only letters, digits and `_` (the signed content is
/// `id.timestamp.body`, so an id must hold no `.`).
pub(super) fn message_id(event: &RunEvent) -> String {
    format!(
        "evt_{}_{:x}_{:x}",
        event.run_id.0.simple(),
        event.position.major,
        event.position.minor
    )
}

/// Writes request bodies.
#[derive(Clone)]
pub(crate) struct Payloads {
    run_event: MessageDescriptor,
}

/// The body, fields in this order.
#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    timestamp: String,
    data: &'a serde_json::value::RawValue,
}

impl Payloads {
    pub(crate) fn new() -> Result<Self, String> {
        let pool = DescriptorPool::decode(pb::FILE_DESCRIPTOR_SET)
            .map_err(|error| format!("reading the compiled descriptors: {error}"))?;
        let run_event = pool
            .get_message_by_name("agentd.v1.RunEvent")
            .ok_or("the compiled descriptors lack agentd.v1.RunEvent")?;
        Ok(Self { run_event })
    }

    /// The request body for `event`: compact JSON.
    pub(crate) fn body(&self, event: &RunEvent) -> Result<Vec<u8>, String> {
        let proto = run_event_to_proto(event);
        let message = DynamicMessage::decode(self.run_event.clone(), proto.encode_to_vec().as_slice())
            .map_err(|error| format!("re-reading the event: {error}"))?;
        let mut data = serde_json::Serializer::new(Vec::new());
        message
            .serialize_with_options(&mut data, &SerializeOptions::new())
            .map_err(|error| format!("writing the event as JSON: {error}"))?;
        let data = String::from_utf8(data.into_inner()).map_err(|error| error.to_string())?;
        let data = serde_json::value::RawValue::from_string(data).map_err(|error| error.to_string())?;
        let body = Body {
            kind: event_type(event.kind),
            timestamp: timestamp(event.time).to_string(),
            data: &data,
        };
        serde_json::to_vec(&body).map_err(|error| format!("writing the body: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{EventPosition, RunId, RunStatus, Tenant, Timestamp};

    fn event(kind: RunEventKind) -> RunEvent {
        RunEvent {
            position: EventPosition { major: 0, minor: 42 },
            time: Timestamp(1_764_000_000_123_456),
            kind,
            tenant: Tenant::default(),
            run_id: RunId::new(),
            agent_id: "assistant".into(),
            thread_id: None,
            status: RunStatus::Completed,
            pending: Vec::new(),
            expires_at: None,
            decisions: Vec::new(),
        }
    }

    #[test]
    fn types_name_every_kind_once() {
        for kind in RunEventKind::ALL {
            assert_eq!(parse_event_type(event_type(kind)), Some(kind));
        }
        assert_eq!(parse_event_type("run.paused"), None);
        assert_eq!(parse_event_type("completed"), None);
    }

    #[test]
    fn the_body_is_type_timestamp_and_the_event_in_proto_json() {
        let payloads = Payloads::new().expect("descriptors");
        let event = event(RunEventKind::Completed);
        let body = payloads.body(&event).expect("body");
        let text = String::from_utf8(body.clone()).expect("UTF-8");
        assert!(
            text.starts_with(r#"{"type":"run.completed","timestamp":"2025-11-24T"#),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(json["timestamp"], "2025-11-24T16:00:00.123456Z");
        assert_eq!(json["data"]["runId"], event.run_id.to_string());
        assert_eq!(json["data"]["kind"], "RUN_EVENT_KIND_COMPLETED");
        assert_eq!(json["data"]["status"], "RUN_STATUS_COMPLETED");
        assert_eq!(json["data"]["cursor"], event.cursor().encode());
        assert_eq!(json["data"]["time"], "2025-11-24T16:00:00.123456Z");
        // The same bytes at every attempt.
        assert_eq!(payloads.body(&event).expect("body"), body);
    }

    #[test]
    fn message_ids_are_stable_and_free_of_dots() {
        let event = event(RunEventKind::Started);
        let id = message_id(&event);
        assert_eq!(id, message_id(&event.clone()));
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{id}");
        let mut later = event.clone();
        later.position.minor += 1;
        assert_ne!(message_id(&later), id);
    }
}
