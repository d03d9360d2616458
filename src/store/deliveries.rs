//! The delivery ledgers (one per webhook, and `a2a:push`), as the `RunStore` methods that keep it
//! take and return it. The run events are the outbox (each is stored in
//! the write that changed its run); the ledger records, per webhook, how
//! far into them it has enqueued deliveries (its cursor), and each
//! delivery's state: pending (due at a time, perhaps claimed by one
//! replica for one attempt), delivered, or finally failed. It never holds
//! a request body: the body is made from the event at each attempt.

use crate::domain::{EventPosition, RunEvent, RunId, Timestamp};

/// A delivery's id in its store.
pub type DeliveryId = i64;

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

/// What a claim found (see `RunStore::claim_deliveries`).
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
