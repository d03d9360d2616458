//! The runtime's store, as its parts hold it: one narrow handle per store
//! trait, each derived from the one store (behind the runtime's layer,
//! `store_layer.rs`) by trait upcasting. A part takes the handles of the
//! tables it touches and no others, so its signature says what it reads
//! and writes, and the compiler holds it to that: the emitter writes
//! through [`RunStore`] alone, a WatchRuns follower reads [`RunEventLog`]
//! alone, a ledger's enqueuer and deliverer take the [`DeliveryLedger`]
//! with the reads an endpoint makes ([`super::LedgerReads`]). A call
//! through a handle is the same one dynamic call as through the whole
//! store.

use std::sync::Arc;

use crate::store::{
    DeliveryLedger, GrantStore, Presence, PushConfigStore, RunEventLog, RunQueries, RunStore, Store,
    ThreadStore,
};

/// The store, one handle per trait; every handle is the same store.
#[derive(Clone)]
pub(super) struct Tables {
    /// Runs' records and chunks: written by the lifecycle and the
    /// execution only.
    pub(super) runs: Arc<dyn RunStore>,
    /// Reads across runs: listings, the sweeps' searches, the gauges.
    pub(super) queries: Arc<dyn RunQueries>,
    /// Threads: their reads, their deletion, the search for idle ones.
    pub(super) threads: Arc<dyn ThreadStore>,
    /// The run events that WatchRuns and the delivery ledgers follow.
    pub(super) run_events: Arc<dyn RunEventLog>,
    /// The delivery ledgers (webhooks, A2A push).
    pub(super) ledger: Arc<dyn DeliveryLedger>,
    /// A2A push configurations.
    pub(super) push_configs: Arc<dyn PushConfigStore>,
    /// Grants.
    pub(super) grants: Arc<dyn GrantStore>,
    /// The store as a whole: sharing, this replica's registration, the
    /// health probe.
    pub(super) presence: Arc<dyn Presence>,
}

impl Tables {
    /// The handles on `store`.
    pub(super) fn of(store: Arc<dyn Store>) -> Self {
        Self {
            runs: store.clone(),
            queries: store.clone(),
            threads: store.clone(),
            run_events: store.clone(),
            ledger: store.clone(),
            push_configs: store.clone(),
            grants: store.clone(),
            presence: store,
        }
    }
}
