//! The delivery ledgers (one per webhook, and `a2a:push`): the trait that
//! keeps them ([`DeliveryLedger`]) and what it takes and returns. The run events are the outbox (each is stored in
//! the write that changed its run); the ledger records, per webhook, how
//! far into them it has enqueued deliveries (its cursor), and each
//! delivery's state: pending (due at a time, perhaps claimed by one
//! replica for one attempt), delivered, or finally failed. It never holds
//! a request body: the body is made from the event at each attempt.

use std::collections::BTreeMap;

use async_trait::async_trait;

use super::StoreError;
use agentd_domain::{EventPosition, RunEvent, RunId, Timestamp};

/// The ledgers of deliveries made from the run events. A ledger is named
/// by its endpoint (a webhook's name, `a2a:push`); its deliveries go with
/// their runs ([`super::ThreadStore::delete_thread`]).
#[async_trait]
pub trait DeliveryLedger: Send + Sync + 'static {
    /// Where `ledger` stands in the run events: the position after which
    /// it has enqueued nothing yet. A ledger the store has not seen starts
    /// at `start` (stored, so that every replica agrees on it).
    async fn ledger_cursor(&self, ledger: &str, start: EventPosition) -> Result<EventPosition, StoreError>;

    /// Moves `ledger`'s cursor from `enqueue.from` to `enqueue.to` and
    /// stores `enqueue.deliveries` (pending, due and enqueued at
    /// `enqueue.now`), in one atomic write, if the cursor is still at
    /// `from`: `Ok(false)` and nothing stored otherwise (another replica
    /// enqueued them). A ledger never has two deliveries of one event to
    /// one target.
    async fn enqueue_deliveries(&self, ledger: &str, enqueue: &Enqueue<'_>) -> Result<bool, StoreError>;

    /// Claims at most `claim.limit` of `ledger`'s pending deliveries that
    /// are due at `claim.now` and held by no unexpired lease, for one
    /// attempt each: their attempt count rises by one and `claim.owner`
    /// holds them until `claim.lease_until`. A delivery waits while an earlier one (by event
    /// position) of its run and target is pending, so that a run's events
    /// arrive in order. Each delivery is claimed by one caller at a time,
    /// across every replica sharing the store. Soonest due first.
    async fn claim_deliveries(&self, ledger: &str, claim: &Claim<'_>) -> Result<DeliveryClaim, StoreError>;

    /// Records how attempt `attempt` of delivery `id` ended (at `now`), and
    /// frees its lease, if the delivery is still pending at that attempt:
    /// `Ok(false)` and nothing changed otherwise (a later attempt claimed
    /// it after the lease expired, or it went with its run).
    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// How many deliveries are pending, by ledger (ledgers with none are
    /// left out); counted from an index, for the metrics gauge.
    async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError>;
}

/// A delivery's id in its store.
pub type DeliveryId = i64;

/// What [`DeliveryLedger::enqueue_deliveries`] stores as a ledger's cursor
/// moves over the run events.
#[derive(Clone, Copy, Debug)]
pub struct Enqueue<'a> {
    /// Where the cursor must still be.
    pub from: EventPosition,
    /// Where it moves: the last event read.
    pub to: EventPosition,
    /// What the events read make.
    pub deliveries: &'a [NewDelivery],
    pub now: Timestamp,
}

/// A claim of due deliveries, each for one attempt (see
/// [`DeliveryLedger::claim_deliveries`]).
#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    /// Who holds them (a replica id).
    pub owner: &'a str,
    pub now: Timestamp,
    /// Until when the claim holds them.
    pub lease_until: Timestamp,
    /// The most deliveries claimed.
    pub limit: usize,
}

/// An event a ledger's endpoint wants, as its enqueuer hands it to the
/// store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewDelivery {
    pub run_id: RunId,
    pub event: EventPosition,
    /// Where it goes, when the ledger's deliveries go to several places
    /// (an A2A push configuration, as its endpoint writes it); empty when
    /// they all go to the one endpoint the ledger is named after. A ledger
    /// holds one delivery per event and target, and delivers a run's
    /// events to one target in order.
    pub target: String,
}

/// A delivery claimed for one attempt, by one replica, until its lease
/// expires.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimedDelivery {
    pub id: DeliveryId,
    /// This attempt's number, from 1. It is also the claim's token: the
    /// outcome of an attempt is recorded only while no later attempt has
    /// claimed the delivery.
    pub attempt: u32,
    /// When the delivery was enqueued: its retry schedule counts from here.
    pub enqueued_at: Timestamp,
    pub event: RunEvent,
    /// As enqueued (see [`NewDelivery::target`]).
    pub target: String,
}

/// What a claim found (see [`DeliveryLedger::claim_deliveries`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeliveryClaim {
    /// In the order they should be attempted.
    pub deliveries: Vec<ClaimedDelivery>,
    /// When the next pending delivery that nothing holds back becomes due
    /// (its retry time, or the expiry of the lease another attempt holds):
    /// `None` without any. A delivery that waits for an earlier one of its
    /// run is not counted: it becomes due when that one is finished.
    pub next_due: Option<Timestamp>,
}

/// How an attempt ended, as the ledger records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The endpoint answered 2xx: the delivery is done.
    Delivered,
    /// It did not; the next attempt is due `at`.
    Retry { at: Timestamp, error: String },
    /// It did not, and the schedule is over: the delivery failed for good.
    Failed { error: String },
}

impl AttemptOutcome {
    /// What a durable backend stores for it at `now`: the delivery's state
    /// (`pending`, `delivered` or `failed`), its next attempt's time (kept
    /// when `None`), the error, and when it was finished.
    pub(crate) fn columns(&self, now: Timestamp) -> (&'static str, Option<i64>, Option<&str>, Option<i64>) {
        match self {
            AttemptOutcome::Delivered => ("delivered", None, None, Some(now.0)),
            AttemptOutcome::Retry { at, error } => ("pending", Some(at.0), Some(error.as_str()), None),
            AttemptOutcome::Failed { error } => ("failed", None, Some(error.as_str()), Some(now.0)),
        }
    }
}
