//! The gate of every surface's streams (gRPC's streaming RPCs, A2A's over
//! each binding, AG-UI's and MCP's responses): it admits new streams while
//! the server serves and refuses them (UNAVAILABLE) once it drains; it
//! caps the streams each tenant has open (`limits.max_streams_per_tenant`,
//! RESOURCE_EXHAUSTED past it; `crate::tenant_slots`); it counts the open
//! streams, from their admission on (before the run behind one has stored
//! anything), so the drain can wait for them; and it ends a stream with a
//! status when its client's deadline (`grpc-timeout`) passes
//! (DEADLINE_EXCEEDED) or when the drain period is over (UNAVAILABLE). A
//! stream it ends is only dropped: the run behind it does what its
//! `on_disconnect` says, as when a client leaves. Each surface says a
//! refusal ([`StreamRefused`]) in its own protocol's words.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Instant, Sleep};
use tokio_stream::wrappers::WatchStream;
use tokio_stream::Stream;
use tonic::metadata::MetadataMap;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::domain::Tenant;
use crate::tenant_slots::{TenantSlot, TenantSlots};

/// Where the server is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// New streams are admitted.
    Serving,
    /// New streams are refused; open ones go on.
    Draining,
    /// Open streams are ended.
    Closed,
}

/// Shared by the surfaces and the server that drains them. Cheap to clone.
#[derive(Clone, Debug)]
pub struct StreamGate {
    phase: Arc<watch::Sender<Phase>>,
    open: Arc<watch::Sender<usize>>,
    tenants: Arc<TenantSlots>,
    /// `limits.max_streams_per_tenant`.
    max_per_tenant: usize,
}

impl Default for StreamGate {
    fn default() -> Self {
        Self::new(crate::limits::Limits::default().max_streams_per_tenant)
    }
}

/// Why the gate refused a stream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamRefused {
    #[error("the server is shutting down and takes no new streams; retry on another server")]
    Draining,
    #[error(
        "tenant {tenant:?} already has {max} streams open, the most it may \
         (limits.max_streams_per_tenant); retry once one ends"
    )]
    TooManyStreams { tenant: Tenant, max: usize },
}

impl StreamRefused {
    /// The ErrorInfo reason of the refusal.
    pub fn reason(&self) -> &'static str {
        match self {
            StreamRefused::Draining => "SERVER_DRAINING",
            StreamRefused::TooManyStreams { .. } => "TOO_MANY_STREAMS",
        }
    }
}

/// UNAVAILABLE (retry elsewhere) while draining; RESOURCE_EXHAUSTED with
/// an ErrorInfo naming the limit and a QuotaFailure naming the tenant past
/// the cap.
impl From<StreamRefused> for Status {
    fn from(refused: StreamRefused) -> Self {
        let message = refused.to_string();
        match &refused {
            StreamRefused::Draining => unavailable(refused.reason(), &message),
            StreamRefused::TooManyStreams { tenant, max } => {
                let mut details = error_info(
                    refused.reason(),
                    &[
                        ("limit", "max_streams_per_tenant".to_owned()),
                        ("max", max.to_string()),
                    ],
                );
                details.add_quota_failure_violation(format!("tenant:{tenant}"), &message);
                Status::with_error_details(Code::ResourceExhausted, message, details)
            }
        }
    }
}

impl StreamGate {
    /// A gate that lets each tenant have `max_per_tenant` streams open.
    pub fn new(max_per_tenant: usize) -> Self {
        Self {
            phase: Arc::new(watch::channel(Phase::Serving).0),
            open: Arc::new(watch::channel(0).0),
            tenants: Arc::default(),
            max_per_tenant,
        }
    }

    pub fn phase(&self) -> Phase {
        *self.phase.borrow()
    }

    /// Admits a new stream of `tenant`, counted among the open ones (the
    /// server's and the tenant's) from now until it is dropped (with the
    /// stream it guards, see [`StreamGate::guard`]); refused once the
    /// server drains, or while `tenant` has as many open as it may.
    pub fn admit(&self, tenant: &Tenant) -> Result<OpenStream, StreamRefused> {
        match self.phase() {
            Phase::Serving => {
                let max = self.max_per_tenant;
                let slot =
                    self.tenants
                        .acquire(tenant, max)
                        .ok_or_else(|| StreamRefused::TooManyStreams {
                            tenant: tenant.clone(),
                            max,
                        })?;
                Ok(OpenStream::new(Arc::clone(&self.open), slot))
            }
            Phase::Draining | Phase::Closed => Err(StreamRefused::Draining),
        }
    }

    /// Refuses new streams from now on.
    pub fn drain(&self) {
        self.phase.send_if_modified(|phase| {
            let changed = *phase == Phase::Serving;
            if changed {
                *phase = Phase::Draining;
            }
            changed
        });
    }

    /// Ends every open stream with UNAVAILABLE.
    pub fn close(&self) {
        self.phase.send_replace(Phase::Closed);
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        *self.open.borrow()
    }

    /// Resolves once no stream is open.
    pub async fn idle(&self) {
        let mut open = self.open.subscribe();
        // The sender lives in `self`, so the wait cannot fail.
        let _ = open.wait_for(|count| *count == 0).await;
    }

    /// `stream`, admitted as `open`, ended with a status at `deadline` or
    /// when the gate closes.
    pub fn guard<S>(&self, stream: S, open: OpenStream, deadline: Option<Instant>) -> Guarded<S> {
        self.guarded(stream, open, deadline, Ending::RUN)
    }

    /// [`StreamGate::guard`] for a stream that never ends by itself
    /// (WatchRuns): it ends as soon as the server drains, so that the drain
    /// waits only for the streams of runs.
    pub fn guard_feed<S>(&self, stream: S, open: OpenStream, deadline: Option<Instant>) -> Guarded<S> {
        self.guarded(stream, open, deadline, Ending::FEED)
    }

    fn guarded<S>(
        &self,
        stream: S,
        open: OpenStream,
        deadline: Option<Instant>,
        ending: Ending,
    ) -> Guarded<S> {
        Guarded {
            inner: stream,
            deadline: deadline.map(|at| Box::pin(tokio::time::sleep_until(at))),
            phase: WatchStream::new(self.phase.subscribe()),
            ending,
            _open: open,
            ended: false,
        }
    }
}

/// When and how the gate ends a stream of the server's.
#[derive(Clone, Copy, Debug)]
struct Ending {
    /// The phase from which on the stream is ended.
    from: Phase,
    /// What the client is told then.
    message: &'static str,
}

impl Ending {
    const RUN: Ending = Ending {
        from: Phase::Closed,
        message: "the server shut down before the stream ended; follow the run with SubscribeRun",
    };
    const FEED: Ending = Ending {
        from: Phase::Draining,
        message:
            "the server is shutting down; continue with WatchRuns after the last cursor, on another server",
    };
}

impl Phase {
    /// Whether this phase is `other` or later.
    fn reached(self, other: Phase) -> bool {
        let rank = |phase| match phase {
            Phase::Serving => 0,
            Phase::Draining => 1,
            Phase::Closed => 2,
        };
        rank(self) >= rank(other)
    }
}

/// A stream the gate ends: checked, in this order, before each item of the
/// stream it guards.
pub struct Guarded<S> {
    inner: S,
    deadline: Option<Pin<Box<Sleep>>>,
    phase: WatchStream<Phase>,
    ending: Ending,
    _open: OpenStream,
    ended: bool,
}

impl<S, T> Stream for Guarded<S>
where
    S: Stream<Item = Result<T, Status>> + Unpin,
{
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if let Some(Poll::Ready(())) = self.deadline.as_mut().map(|sleep| sleep.as_mut().poll(cx)) {
            return self.end(Status::deadline_exceeded(
                "the deadline (grpc-timeout) passed before the stream ended",
            ));
        }
        // Every change of phase since the last poll; the gate is gone with
        // the server when it ends, and then nothing closes the stream.
        while let Poll::Ready(Some(phase)) = Pin::new(&mut self.phase).poll_next(cx) {
            if phase.reached(self.ending.from) {
                let message = self.ending.message;
                return self.end(unavailable("SERVER_SHUTDOWN", message));
            }
        }
        Pin::new(&mut self.inner).poll_next(cx)
    }
}

impl<S> Guarded<S> {
    fn end<T>(&mut self, status: Status) -> Poll<Option<Result<T, Status>>> {
        self.ended = true;
        Poll::Ready(Some(Err(status)))
    }
}

/// An admitted stream: counted among the open ones, and its tenant's, for
/// as long as it lives.
#[derive(Debug)]
pub struct OpenStream {
    open: Arc<watch::Sender<usize>>,
    _slot: TenantSlot,
}

impl OpenStream {
    fn new(open: Arc<watch::Sender<usize>>, slot: TenantSlot) -> Self {
        open.send_modify(|count| *count += 1);
        Self { open, _slot: slot }
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.open.send_modify(|count| *count = count.saturating_sub(1));
    }
}

/// An ErrorInfo of `reason` in agentd's domain.
fn error_info(reason: &str, metadata: &[(&str, String)]) -> ErrorDetails {
    let metadata = metadata
        .iter()
        .map(|(key, value)| ((*key).to_owned(), value.clone()));
    ErrorDetails::with_error_info(
        reason,
        "agentd.v1",
        metadata.collect::<std::collections::HashMap<_, _>>(),
    )
}

fn unavailable(reason: &str, message: &str) -> Status {
    Status::with_error_details(Code::Unavailable, message, error_info(reason, &[]))
}

/// The deadline of a call that came in at `requested`, from its
/// `grpc-timeout`.
pub fn client_deadline(metadata: &MetadataMap, requested: Instant) -> Option<Instant> {
    client_timeout(metadata).map(|timeout| requested + timeout)
}

/// The client's timeout from `grpc-timeout` (`<up to 8 digits><H|M|S|m|u|n>`);
/// a header that does not parse is ignored.
fn client_timeout(metadata: &MetadataMap) -> Option<Duration> {
    let value = metadata.get("grpc-timeout")?.to_str().ok()?;
    if value.len() < 2 || value.len() > 9 {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.checked_mul(3600)?),
        "M" => Duration::from_secs(amount.checked_mul(60)?),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use tokio_stream::StreamExt;

    use super::*;

    fn timeout_of(value: &str) -> Option<Duration> {
        let mut metadata = MetadataMap::new();
        metadata.insert("grpc-timeout", value.parse().unwrap());
        client_timeout(&metadata)
    }

    #[test]
    fn grpc_timeout_header() {
        assert_eq!(timeout_of("250m"), Some(Duration::from_millis(250)));
        assert_eq!(timeout_of("3S"), Some(Duration::from_secs(3)));
        assert_eq!(timeout_of("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(timeout_of("99999999n"), Some(Duration::from_nanos(99_999_999)));
        for bad in ["", "m", "123456789S", "12x", "-1S", "1.5S"] {
            assert_eq!(timeout_of(bad), None, "{bad:?}");
        }
        assert_eq!(client_timeout(&MetadataMap::new()), None);
    }

    #[tokio::test]
    async fn admits_until_drained_and_counts_open_streams() {
        let gate = StreamGate::default();
        let tenant = Tenant::default();
        let open = gate.admit(&tenant).expect("admitted");
        assert_eq!(gate.open_streams(), 1, "counted from its admission");
        let stream = gate.guard(tokio_stream::pending::<Result<u8, Status>>(), open, None);
        assert_eq!(gate.open_streams(), 1);
        gate.drain();
        let refused = Status::from(gate.admit(&tenant).unwrap_err());
        assert_eq!(refused.code(), Code::Unavailable);
        let mut stream = Box::pin(stream);
        gate.close();
        let ended = stream.next().await.unwrap().unwrap_err();
        assert_eq!(ended.code(), Code::Unavailable);
        assert!(stream.next().await.is_none());
        drop(stream);
        assert_eq!(gate.open_streams(), 0);
        gate.idle().await;
    }

    #[test]
    fn each_tenant_has_its_own_cap() {
        let gate = StreamGate::new(1);
        let acme = Tenant::new("acme").unwrap();
        let open = gate.admit(&acme).expect("the first stream");
        let refused = gate.admit(&acme).unwrap_err();
        assert_eq!(
            refused,
            StreamRefused::TooManyStreams {
                tenant: acme.clone(),
                max: 1
            }
        );
        let status = Status::from(refused);
        assert_eq!(status.code(), Code::ResourceExhausted);
        assert!(
            status.message().contains("limits.max_streams_per_tenant"),
            "{status:?}"
        );
        let info = status.get_details_error_info().expect("ErrorInfo");
        assert_eq!(info.reason, "TOO_MANY_STREAMS");
        assert_eq!(info.metadata.get("max").map(String::as_str), Some("1"));
        let _theirs = gate.admit(&Tenant::default()).expect("another tenant's own");
        drop(open);
        assert!(gate.admit(&acme).is_ok(), "a closed stream frees its slot");
    }

    #[tokio::test]
    async fn a_passed_deadline_ends_even_a_busy_stream() {
        let gate = StreamGate::default();
        let busy = tokio_stream::iter(std::iter::repeat_with(|| Ok::<_, Status>(1u8)));
        let open = gate.admit(&Tenant::default()).expect("admitted");
        let stream = gate.guard(busy, open, Some(Instant::now() + Duration::from_millis(20)));
        let mut stream = Box::pin(stream);
        let ended = loop {
            match stream.next().await {
                Some(Ok(_)) => tokio::task::yield_now().await,
                Some(Err(status)) => break status,
                None => panic!("the stream ended without a status"),
            }
        };
        assert_eq!(ended.code(), Code::DeadlineExceeded);
        assert!(stream.next().await.is_none());
    }
}
