//! A run record as the SQL backends store it, and read it back: the
//! record of its last commit in an envelope that names its layout (see
//! [`FORMAT`]), encoded as `encoding.rs` says, with the columns that
//! appends move since (version, `last_seq`, the lease's expiry) laid over
//! it; and a thread from its row joined with its latest run's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{corrupt, StoreError};
use agentd_domain::{
    AnswerRecord, Event, LatestRun, Lease, Message, PendingCall, PendingCalls, Phase, Position, ResumeRecord,
    RunEventKind, RunFailure, RunId, RunOptions, RunParts, RunRecord, RunState, RunStatus, Tenant, ThreadId,
    ThreadLink, ThreadRecord, Timestamp, ToolDefinition, Usage,
};

/// The layout of the records this build writes: `{"format": 2, "run":
/// RunRecord}`, the run's phase one tagged value with what only that phase
/// has. Layout 1, written before phases existed, is a bare record with a
/// `status` and each phase's data in fields of their own ([`Layout1`]); it
/// is read, never written. A record's JSON tells the two apart by how it
/// begins: serde writes an envelope's fields in order, `format` first.
const FORMAT: u32 = 2;

/// How an envelope's JSON begins.
const ENVELOPE_PREFIX: &[u8] = b"{\"format\":";

#[derive(Serialize)]
struct Envelope<'a> {
    format: u32,
    run: &'a RunRecord,
}

#[derive(Deserialize)]
struct StoredEnvelope {
    format: u32,
    run: RunRecord,
}

/// An envelope's layout alone, for the error about one this build does
/// not know.
#[derive(Deserialize)]
struct LayoutOnly {
    format: u32,
}

fn unknown_layout(format: u32) -> StoreError {
    corrupt(format!(
        "run record layout {format}: this build reads layouts 1 and {FORMAT}"
    ))
}

/// `run` as stored: compressed unless it is soon replaced anyway (the
/// record of a running run is replaced by its next commit within a step;
/// the records that stay, suspended or finished, are compressed).
pub(crate) fn encode_run(run: &RunRecord) -> Result<Vec<u8>, StoreError> {
    let envelope = Envelope { format: FORMAT, run };
    if run.status() == RunStatus::Running {
        super::encoding::encode_plain(&envelope)
    } else {
        super::encoding::encode(&envelope)
    }
}

/// `run` as stored, never compressed (for a backend that compresses what
/// it stores itself).
pub(crate) fn encode_run_plain(run: &RunRecord) -> Result<Vec<u8>, StoreError> {
    super::encoding::encode_plain(&Envelope { format: FORMAT, run })
}

/// Reads back a record [`encode_run`] or [`encode_run_plain`] stored, in this layout or an
/// earlier one.
pub(crate) fn decode_run(bytes: &[u8]) -> Result<RunRecord, StoreError> {
    let json = super::encoding::json(bytes)?;
    if !json.starts_with(ENVELOPE_PREFIX) {
        let layout1: Layout1 = serde_json::from_slice(&json).map_err(corrupt)?;
        return layout1.try_into();
    }
    match serde_json::from_slice::<StoredEnvelope>(&json) {
        Ok(stored) if stored.format == FORMAT => Ok(stored.run),
        Ok(StoredEnvelope { format, .. }) => Err(unknown_layout(format)),
        Err(error) => Err(match serde_json::from_slice::<LayoutOnly>(&json) {
            // A later build's layout, which this one cannot read.
            Ok(LayoutOnly { format }) if format != FORMAT => unknown_layout(format),
            _ => corrupt(error),
        }),
    }
}

/// The columns a record read selects, in this order: the record of the
/// last commit, then what appends moved since (see [`overlay`]).
pub(crate) const RECORD_COLUMNS: &str = "record, version, last_seq, lease_expires_at";

/// The record of a run row.
pub(crate) fn overlay(
    record: &[u8],
    version: i64,
    last_seq: i64,
    lease_expires_at: Option<i64>,
) -> Result<RunRecord, StoreError> {
    let mut run = decode_run(record)?;
    let position = Position {
        version: u64::try_from(version).map_err(corrupt)?,
        last_seq: u64::try_from(last_seq).map_err(corrupt)?,
    };
    run.restore(position, lease_expires_at.map(Timestamp));
    Ok(run)
}

/// A thread's key as stored: its tenant and its id.
pub(crate) fn thread_key(tenant: &str, id: &str) -> Result<(Tenant, ThreadId), StoreError> {
    Ok((
        Tenant::new(tenant).map_err(corrupt)?,
        ThreadId::new(id).map_err(corrupt)?,
    ))
}

/// A thread row, with its latest run's status and last change (`None`
/// when that run is gone).
pub(crate) fn thread(
    (tenant, id): (&str, &str),
    created_at: i64,
    updated_at: i64,
    latest_run: RunId,
    latest: Option<(&str, i64)>,
) -> Result<ThreadRecord, StoreError> {
    let latest = match latest {
        Some((status, at)) => Some(LatestRun {
            status: RunStatus::parse(status).ok_or_else(|| corrupt(format!("run status {status:?}")))?,
            updated_at: Timestamp(at),
        }),
        None => None,
    };
    let (tenant, id) = thread_key(tenant, id)?;
    Ok(ThreadRecord {
        tenant,
        id,
        created_at: Timestamp(created_at),
        updated_at: Timestamp(updated_at),
        latest_run,
        latest,
    })
}

/// A record as stored before phases existed (layout 1): the status, and
/// the data of every phase in optional fields.
#[derive(Deserialize)]
struct Layout1 {
    id: RunId,
    /// Runs stored before tenants existed belong to the default tenant.
    #[serde(default)]
    tenant: Tenant,
    agent_id: String,
    status: RunStatus,
    version: u64,
    last_seq: u64,
    created_at: Timestamp,
    updated_at: Timestamp,
    expires_at: Option<Timestamp>,
    request_id: Option<String>,
    metadata: BTreeMap<String, String>,
    options: RunOptions,
    state: Layout1State,
    #[serde(default)]
    run_tools: Vec<ToolDefinition>,
    #[serde(default)]
    lease: Option<Lease>,
    #[serde(default)]
    thread: Option<ThreadLink>,
}

#[derive(Deserialize)]
struct Layout1State {
    messages: Vec<Message>,
    pending: Vec<PendingCall>,
    steps: u32,
    usage: Usage,
    final_text: String,
    failure: Option<RunFailure>,
    #[serde(default)]
    cancel_reason: Option<String>,
    #[serde(default)]
    resumes: Vec<ResumeRecord>,
    #[serde(default)]
    answers: Vec<AnswerRecord>,
}

impl TryFrom<Layout1> for RunRecord {
    type Error = StoreError;

    fn try_from(old: Layout1) -> Result<Self, StoreError> {
        let state = old.state;
        let phase = match old.status {
            RunStatus::Running => Phase::Running {
                // Stored before leases: nobody holds it, recovery takes it.
                lease: old.lease.unwrap_or_else(Lease::vacant),
                pending: state.pending,
            },
            RunStatus::Suspended => Phase::Suspended {
                pending: PendingCalls::new(state.pending)
                    .ok_or_else(|| corrupt("a suspended run waits on no call"))?,
                // Stored without an expiry: it never expires.
                expires_at: old.expires_at.unwrap_or(Timestamp(i64::MAX)),
                reminders: Vec::new(),
                reminded_at: None,
            },
            RunStatus::Completed => Phase::Completed {
                final_text: state.final_text,
            },
            RunStatus::Failed => Phase::Failed {
                failure: state.failure.unwrap_or_else(|| RunFailure {
                    code: "internal".into(),
                    message: "the run failed before failures were recorded".into(),
                }),
            },
            RunStatus::Cancelled => Phase::Cancelled {
                reason: state.cancel_reason.unwrap_or_default(),
            },
            RunStatus::Expired => Phase::Expired,
        };
        Ok(RunParts {
            id: old.id,
            tenant: old.tenant,
            agent_id: old.agent_id,
            version: old.version,
            last_seq: old.last_seq,
            created_at: old.created_at,
            updated_at: old.updated_at,
            request_id: old.request_id,
            metadata: old.metadata,
            options: old.options,
            run_tools: old.run_tools,
            thread: old.thread,
            // Layout 1 predates trace contexts.
            trace: None,
            state: RunState {
                messages: state.messages,
                steps: state.steps,
                usage: state.usage,
                resumes: state.resumes,
                answers: state.answers,
                // Layout 1 predates edited approvals and decisions.
                edited_calls: Vec::new(),
                decisions: Vec::new(),
                changed_by: 0..0,
            },
            phase,
        }
        .into())
    }
}

/// A run event as the SQL backends store it, column by column (see
/// their `run_events` tables).
pub(crate) struct RunEventRow {
    pub position: agentd_domain::EventPosition,
    pub tenant: String,
    pub run_id: agentd_domain::RunId,
    pub agent_id: String,
    pub thread_id: Option<String>,
    pub kind: String,
    pub status: String,
    pub time: i64,
    /// The pending calls, as `encoding::encode` wrote them.
    pub pending: Option<Vec<u8>>,
    pub expires_at: Option<i64>,
    /// The decisions the change was made of, as `encoding::encode` wrote
    /// them (see [`event_decisions`]).
    pub decisions: Option<Vec<u8>>,
}

impl RunEventRow {
    pub(crate) fn into_event(self) -> Result<agentd_domain::RunEvent, StoreError> {
        use agentd_domain::{RunEventKind, RunStatus};
        let kind = RunEventKind::parse(&self.kind)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown run event kind {:?}", self.kind)))?;
        let status = RunStatus::parse(&self.status)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown run status {:?}", self.status)))?;
        Ok(agentd_domain::RunEvent {
            position: self.position,
            time: Timestamp(self.time),
            kind,
            tenant: Tenant::new(&self.tenant).map_err(corrupt)?,
            run_id: self.run_id,
            agent_id: self.agent_id,
            thread_id: self
                .thread_id
                .as_deref()
                .map(ThreadId::new)
                .transpose()
                .map_err(corrupt)?,
            status,
            pending: match self.pending {
                Some(bytes) => super::encoding::decode(&bytes)?,
                None => Vec::new(),
            },
            expires_at: self.expires_at.map(Timestamp),
            decisions: match self.decisions {
                Some(bytes) => kind.decisions(&super::encoding::decode::<Vec<_>>(&bytes)?),
                None => Vec::new(),
            },
        })
    }
}

/// The decisions of the changes a write that leaves `run` as it is
/// makes, encoded (`plain`: uncompressed), for its run events (each kind
/// takes its own when read: see [`agentd_domain::RunEventKind::decisions`]);
/// `None` without any.
pub(crate) fn event_decisions(run: &RunRecord, plain: bool) -> Result<Option<Vec<u8>>, StoreError> {
    let decisions = run.state.change_decisions();
    if decisions.is_empty() {
        return Ok(None);
    }
    let encoded = if plain {
        super::encoding::encode_plain(&decisions)?
    } else {
        super::encoding::encode(&decisions)?
    };
    Ok(Some(encoded))
}

/// The time of the run events of a write that leaves `run` as it is: a
/// reminder's when it was sent, any other change's the run's `updated_at`.
pub(crate) fn run_event_time(run: &RunRecord, run_events: &[RunEventKind]) -> Timestamp {
    match run_events {
        [RunEventKind::Reminded] => run.reminded_at().unwrap_or(run.updated_at),
        _ => run.updated_at,
    }
}

/// The row of a write's events: the chunks it stored, encoded together,
/// keyed by the run and the last seq.
pub(crate) struct EventBatch {
    pub first_seq: i64,
    pub last_seq: i64,
    pub events: Vec<u8>,
}

/// The row of a write's `events` (`None` without any); their seqs must
/// rise strictly.
pub(crate) fn event_batch(events: &[Event]) -> Result<Option<EventBatch>, StoreError> {
    if let Some(pair) = events.windows(2).find(|pair| pair[1].seq <= pair[0].seq) {
        return Err(StoreError::Backend(format!(
            "events out of order: seq {} after seq {}",
            pair[1].seq, pair[0].seq
        )));
    }
    let (Some(first), Some(last)) = (events.first(), events.last()) else {
        return Ok(None);
    };
    let seq = |event: &Event| i64::try_from(event.seq).map_err(corrupt);
    Ok(Some(EventBatch {
        first_seq: seq(first)?,
        last_seq: seq(last)?,
        events: super::encoding::encode(&events)?,
    }))
}

impl EventBatch {
    /// See [`events_behind`].
    pub(super) fn behind(&self, run_last_seq: i64) -> Option<StoreError> {
        events_behind(self.last_seq, run_last_seq)
    }
}

/// Refuses a run row stored behind its own events, the last of which is
/// `last_seq`: events must come after every stored one, after the run's
/// stored `last_seq`, which every write that stores events moves to their
/// last.
pub(crate) fn events_behind(last_seq: i64, run_last_seq: i64) -> Option<StoreError> {
    (last_seq > run_last_seq).then(|| {
        StoreError::Backend(format!(
            "event seq {last_seq} is after the run's last_seq {run_last_seq}"
        ))
    })
}

/// Why a write whose first event is `first` was refused by a run whose last
/// stored seq is `stored`.
pub(crate) fn stored_already(first: i64, stored: i64) -> StoreError {
    StoreError::Backend(format!(
        "event seq {first} is stored already (the run's last stored seq is {stored})"
    ))
}

/// Adds the events of a stored batch that come after `after_seq` (the
/// first batch read may start at or before it).
pub(crate) fn extend_events(events: &mut Vec<Event>, batch: &[u8], after_seq: u64) -> Result<(), StoreError> {
    let batch: Vec<Event> = super::encoding::decode(batch)?;
    events.extend(batch.into_iter().filter(|event| event.seq > after_seq));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_domain::{SuspendPayload, Waiting};

    /// A suspended run as a build before phases stored it, byte for byte.
    const LAYOUT1_SUSPENDED: &str = r#"{"id":"019ad5a2-7c1e-7d3a-9a51-6f0e2b8c4d10","tenant":"acme","agent_id":"assistant","status":"suspended","version":3,"last_seq":6,"created_at":1796066454000000,"updated_at":1796066455000000,"expires_at":1796671255000000,"request_id":"req-1","metadata":{"ticket":"T-42"},"options":{"max_steps":10,"require_tool_approval":false,"cancel_on_disconnect":true,"suspend_ttl":{"secs":604800,"nanos":0}},"state":{"messages":[{"role":"user","content":"Help me pick a plan"},{"role":"assistant","content":"","tool_calls":[{"id":"call_1_1","name":"ask_user","args":{"question":"Which plan?"}}]}],"pending":[{"call":{"id":"call_1_1","name":"ask_user","args":{"question":"Which plan?"}},"waiting":{"kind":"suspended","payload":{"kind":"custom","data":{"question":"Which plan?"}}}}],"steps":1,"usage":{"input_tokens":12,"output_tokens":7},"final_text":"","failure":null}}"#;

    #[test]
    fn a_record_stored_before_phases_reads_back_in_its_phase() {
        let run = decode_run(LAYOUT1_SUSPENDED.as_bytes()).expect("layout 1");
        assert_eq!(run.tenant.as_str(), "acme");
        assert_eq!((run.version(), run.last_seq()), (3, 6));
        let Phase::Suspended {
            pending, expires_at, ..
        } = &run.phase()
        else {
            panic!("not suspended: {:?}", run.phase());
        };
        assert_eq!(*expires_at, Timestamp(1_796_671_255_000_000));
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].call.id, "call_1_1");
        assert!(matches!(
            &pending[0].waiting,
            Waiting::Suspended {
                payload: SuspendPayload::Custom { .. }
            }
        ));
        assert_eq!(run.state.messages.len(), 2);
        // Written again, it is in this build's layout and reads back the same.
        let stored = encode_run(&run).expect("encode");
        assert!(super::super::encoding::json(&stored)
            .unwrap()
            .starts_with(ENVELOPE_PREFIX));
        assert_eq!(decode_run(&stored).expect("layout 2"), run);
    }

    #[test]
    fn each_phase_of_layout_1_maps_to_its_own() {
        let with = |status: &str, state_extra: &str| {
            let json = LAYOUT1_SUSPENDED
                .replace(r#""status":"suspended""#, &format!(r#""status":"{status}""#))
                .replace(r#""final_text":"","failure":null"#, state_extra);
            decode_run(json.as_bytes()).expect("layout 1").phase().clone()
        };
        assert_eq!(
            with("completed", r#""final_text":"Pro it is.","failure":null"#),
            Phase::Completed {
                final_text: "Pro it is.".into()
            }
        );
        let failure = RunFailure {
            code: "provider_error".into(),
            message: "boom".into(),
        };
        assert_eq!(
            with(
                "failed",
                r#""final_text":"","failure":{"code":"provider_error","message":"boom"}"#
            ),
            Phase::Failed { failure }
        );
        assert_eq!(
            with(
                "cancelled",
                r#""final_text":"","failure":null,"cancel_reason":"no longer needed""#
            ),
            Phase::Cancelled {
                reason: "no longer needed".into()
            }
        );
        assert_eq!(
            with("expired", r#""final_text":"","failure":null"#),
            Phase::Expired
        );
        // Running before leases existed: a vacant lease, taken over first.
        let Phase::Running { lease, pending } = with("running", r#""final_text":"","failure":null"#) else {
            panic!("not running");
        };
        assert_eq!(lease, Lease::vacant());
        assert_eq!(pending.len(), 1, "calls still waiting stay pending");
    }

    #[test]
    fn a_run_keeps_its_trace_context_and_one_stored_without_reads_back_without() {
        let mut run = decode_run(LAYOUT1_SUSPENDED.as_bytes()).expect("layout 1");
        assert_eq!(run.trace, None);
        let without = encode_run(&run).expect("encode");
        assert!(!String::from_utf8_lossy(&super::super::encoding::json(&without).unwrap()).contains("trace"));
        assert_eq!(decode_run(&without).expect("layout 2").trace, None);

        let trace = agentd_domain::TraceContext::from_headers(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ["rojo=00f067aa0ba902b7"],
        )
        .expect("a trace context");
        run.trace = Some(trace);
        assert_eq!(
            decode_run(&encode_run(&run).expect("encode")).expect("layout 2"),
            run
        );
        assert_eq!(
            decode_run(&encode_run_plain(&run).expect("encode")).expect("layout 2"),
            run
        );
    }

    #[test]
    fn a_layout_this_build_does_not_know_is_corrupt_not_misread() {
        let json = br#"{"format":3,"run":{}}"#;
        let error = decode_run(json).expect_err("layout 3");
        assert!(error.to_string().contains("layout 3"), "{error}");
    }
}
