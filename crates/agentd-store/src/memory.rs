//! An in-memory run store for tests and embedding. Same contract as the
//! durable backends; nothing survives the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;

use tokio::sync::watch;

use super::{
    AttemptOutcome, Claim, ClaimedDelivery, DeliveryClaim, DeliveryId, DeliveryLedger, Enqueue, GrantStore,
    Orphan, Presence, PushConfig, PushConfigStore, RunEventLog, RunEventPage, RunQueries, RunQuery, RunStore,
    Sharing, StoreError, ThreadStore,
};
use agentd_domain::{
    Event, EventPosition, Grant, GrantScope, LatestRun, RunEvent, RunEventKind, RunId, RunRecord, RunStatus,
    Tenant, ThreadId, ThreadQuery, ThreadRecord, Timestamp,
};

type Runs = HashMap<RunId, (RunRecord, Vec<Event>)>;
type Threads = HashMap<(Tenant, ThreadId), ThreadRecord>;

/// The run events, in position order, and the last position given.
#[derive(Default)]
struct RunEvents {
    log: Vec<RunEvent>,
    last: i64,
}

/// A webhook delivery as the ledger keeps it.
#[derive(Clone, Debug)]
struct StoredDelivery {
    id: DeliveryId,
    webhook: String,
    run_id: RunId,
    event: EventPosition,
    target: String,
    pending: bool,
    attempts: u32,
    enqueued_at: Timestamp,
    next_attempt_at: Timestamp,
    lease_expires_at: Option<Timestamp>,
}

impl StoredDelivery {
    /// When it may be claimed, if nothing earlier of its run holds it back.
    fn due_at(&self) -> Timestamp {
        self.lease_expires_at
            .map_or(self.next_attempt_at, |lease| lease.max(self.next_attempt_at))
    }
}

/// The webhook delivery ledger: each webhook's cursor, and the deliveries
/// in the order they were enqueued.
#[derive(Default)]
struct Ledger {
    cursors: HashMap<String, EventPosition>,
    deliveries: Vec<StoredDelivery>,
    last_id: DeliveryId,
    /// A2A push notification configurations, by run and id.
    push_configs: std::collections::BTreeMap<(RunId, String), PushConfig>,
    /// Grants, in the order stored.
    grants: Vec<Grant>,
}

impl Ledger {
    /// Whether `delivery` waits for an earlier pending one of its run.
    fn held_back(&self, delivery: &StoredDelivery) -> bool {
        self.deliveries.iter().any(|earlier| {
            earlier.pending
                && earlier.webhook == delivery.webhook
                && earlier.run_id == delivery.run_id
                && earlier.target == delivery.target
                && earlier.event < delivery.event
        })
    }
}

/// Locks are taken runs first, then threads, then run events, then the
/// ledger, so that a write needing several (a thread's run, a run and its
/// event) is atomic and never deadlocks.
pub struct MemoryStore {
    runs: Mutex<Runs>,
    threads: Mutex<Threads>,
    run_events: Mutex<RunEvents>,
    ledger: Mutex<Ledger>,
    signal: watch::Sender<()>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            runs: Mutex::default(),
            threads: Mutex::default(),
            run_events: Mutex::default(),
            ledger: Mutex::default(),
            signal: watch::Sender::new(()),
        }
    }
}

impl MemoryStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, (RunRecord, Vec<Event>)>> {
        // A panic while holding the lock cannot leave a half-written entry:
        // every write below is a single assignment or push.
        self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_threads(&self) -> std::sync::MutexGuard<'_, Threads> {
        self.threads
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_run_events(&self) -> std::sync::MutexGuard<'_, RunEvents> {
        self.run_events
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Stores the run events `kinds` of a write that leaves `run` as it is;
    /// called with the runs locked, so that events are in the order of the
    /// writes.
    fn record_changes(&self, run: &RunRecord, kinds: &[RunEventKind]) {
        if kinds.is_empty() {
            return;
        }
        let mut run_events = self.lock_run_events();
        for kind in kinds {
            run_events.last += 1;
            let mut event = RunEvent::of(run, *kind);
            event.position = EventPosition {
                major: 0,
                minor: run_events.last,
            };
            run_events.log.push(event);
        }
        self.signal.send_replace(());
    }
}

/// `thread` as read: with its latest run's status and last change.
fn with_latest(runs: &Runs, thread: &ThreadRecord) -> ThreadRecord {
    let latest = runs.get(&thread.latest_run).map(|(run, _)| LatestRun {
        status: run.status(),
        updated_at: run.updated_at,
    });
    ThreadRecord {
        latest,
        ..thread.clone()
    }
}

/// The thread write that comes with creating `run`, checked against
/// `threads`; applied by the caller once every check has passed.
fn thread_write(threads: &Threads, run: &RunRecord) -> Result<Option<ThreadRecord>, StoreError> {
    let Some(link) = &run.thread else {
        return Ok(None);
    };
    let key = (run.tenant.clone(), link.id.clone());
    let record = match (threads.get(&key), link.previous) {
        (None, None) => ThreadRecord {
            tenant: run.tenant.clone(),
            id: link.id.clone(),
            created_at: run.created_at,
            updated_at: run.created_at,
            latest_run: run.id,
            latest: None,
        },
        (Some(stored), Some(previous)) if stored.latest_run == previous => ThreadRecord {
            updated_at: run.created_at,
            latest_run: run.id,
            ..stored.clone()
        },
        _ => return Err(StoreError::ThreadMoved),
    };
    Ok(Some(record))
}

/// Like the SQLite backend's primary key: a seq is stored once per run, and a
/// write that repeats one is refused whole.
fn check_new_seqs(log: &[Event], events: &[Event]) -> Result<(), StoreError> {
    for (i, event) in events.iter().enumerate() {
        let repeated = log.iter().chain(&events[..i]).any(|e| e.seq == event.seq);
        if repeated {
            return Err(StoreError::Backend(format!("duplicate event seq {}", event.seq)));
        }
    }
    Ok(())
}

#[async_trait]
impl RunStore for MemoryStore {
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError> {
        let mut runs = self.lock();
        // Like the SQLite backend: a request id (idempotency key) names one
        // run only.
        let request_taken = run.request_id.is_some()
            && runs
                .values()
                .any(|(stored, _)| stored.tenant == run.tenant && stored.request_id == run.request_id);
        if runs.contains_key(&run.id) || request_taken {
            return Err(StoreError::AlreadyExists);
        }
        check_new_seqs(&[], events)?;
        let mut threads = self.lock_threads();
        if let Some(thread) = thread_write(&threads, run)? {
            threads.insert((thread.tenant.clone(), thread.id.clone()), thread);
        }
        runs.insert(run.id, (run.clone(), events.to_vec()));
        self.record_changes(
            run,
            &RunEventKind::of_write(Some(RunEventKind::Started), run.status()),
        );
        Ok(())
    }

    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError> {
        self.lock()
            .get(&id)
            .map(|(run, _)| run.clone())
            .ok_or(StoreError::NotFound)
    }

    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
        run_events: &[RunEventKind],
    ) -> Result<(), StoreError> {
        let mut runs = self.lock();
        let (stored, log) = runs.get_mut(&run.id).ok_or(StoreError::NotFound)?;
        if stored.version() != expected_version {
            return Err(StoreError::VersionConflict {
                expected: expected_version,
                actual: stored.version(),
            });
        }
        check_new_seqs(log, events)?;
        *stored = run.clone();
        log.extend_from_slice(events);
        self.record_changes(run, run_events);
        Ok(())
    }

    async fn append_events(
        &self,
        id: RunId,
        expected_version: u64,
        lease_expires_at: Option<Timestamp>,
        events: &[Event],
    ) -> Result<(), StoreError> {
        let mut runs = self.lock();
        let (stored, log) = runs.get_mut(&id).ok_or(StoreError::NotFound)?;
        if stored.version() != expected_version {
            return Err(StoreError::VersionConflict {
                expected: expected_version,
                actual: stored.version(),
            });
        }
        check_new_seqs(log, events)?;
        let appended = stored
            .position()
            .after_append(events.last().map(|event| event.seq));
        stored.restore(appended, lease_expires_at);
        log.extend_from_slice(events);
        Ok(())
    }

    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError> {
        let runs = self.lock();
        let (_, log) = runs.get(&id).ok_or(StoreError::NotFound)?;
        Ok(log.iter().filter(|e| e.seq > after_seq).cloned().collect())
    }

    async fn find_run_by_request_id(
        &self,
        tenant: &Tenant,
        request_id: &str,
    ) -> Result<Option<RunId>, StoreError> {
        Ok(self
            .lock()
            .values()
            .find(|(run, _)| run.tenant == *tenant && run.request_id.as_deref() == Some(request_id))
            .map(|(run, _)| run.id))
    }
}

#[async_trait]
impl RunQueries for MemoryStore {
    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError> {
        let mut runs: Vec<RunRecord> = self
            .lock()
            .values()
            .filter(|(run, _)| query.matches(run))
            .map(|(run, _)| run.clone())
            .collect();
        runs.sort_unstable_by_key(|run| std::cmp::Reverse(run.id));
        runs.truncate(query.limit);
        Ok(runs)
    }

    async fn count_runs(&self, query: &RunQuery) -> Result<u64, StoreError> {
        let every_page = RunQuery {
            before: None,
            ..query.clone()
        };
        let count = self
            .lock()
            .values()
            .filter(|(run, _)| every_page.matches(run))
            .count();
        Ok(count as u64)
    }

    async fn count_runs_by_agent(&self, status: RunStatus) -> Result<BTreeMap<String, u64>, StoreError> {
        let mut counts = BTreeMap::new();
        for (run, _) in self.lock().values().filter(|(run, _)| run.status() == status) {
            *counts.entry(run.agent_id.clone()).or_insert(0) += 1;
        }
        Ok(counts)
    }

    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError> {
        let mut due: Vec<(Timestamp, RunId)> = self
            .lock()
            .values()
            .filter(|(run, _)| run.status() == RunStatus::Suspended)
            .filter_map(|(run, _)| run.wakes_at().filter(|at| *at <= now).map(|at| (at, run.id)))
            .collect();
        due.sort_unstable();
        Ok(due.into_iter().take(limit).map(|(_, id)| id).collect())
    }

    async fn orphaned_runs(&self, now: Timestamp, limit: usize) -> Result<Vec<Orphan>, StoreError> {
        let mut expired: Vec<(Option<Timestamp>, RunId)> = self
            .lock()
            .values()
            .filter(|(run, _)| run.status() == RunStatus::Running)
            .map(|(run, _)| (run.lease().map(|lease| lease.expires_at), run.id))
            .filter(|(at, _)| at.is_none_or(|at| at <= now))
            .collect();
        expired.sort_unstable();
        Ok(expired
            .into_iter()
            .take(limit)
            .map(|(_, id)| Orphan::expired(id))
            .collect())
    }
}

#[async_trait]
impl ThreadStore for MemoryStore {
    async fn load_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<ThreadRecord, StoreError> {
        let runs = self.lock();
        let threads = self.lock_threads();
        threads
            .get(&(tenant.clone(), id.clone()))
            .map(|thread| with_latest(&runs, thread))
            .ok_or(StoreError::NotFound)
    }

    async fn thread_runs(&self, tenant: &Tenant, id: &ThreadId) -> Result<Vec<RunRecord>, StoreError> {
        let mut found: Vec<RunRecord> = self
            .lock()
            .values()
            .filter(|(run, _)| {
                run.tenant == *tenant && run.thread.as_ref().is_some_and(|link| link.id == *id)
            })
            .map(|(run, _)| run.clone())
            .collect();
        found.sort_unstable_by_key(|run| run.id);
        Ok(found)
    }

    async fn list_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>, StoreError> {
        let runs = self.lock();
        let mut found: Vec<ThreadRecord> = self
            .lock_threads()
            .values()
            .filter(|thread| query.matches(thread))
            .map(|thread| with_latest(&runs, thread))
            .collect();
        found.sort_unstable_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        found.truncate(query.limit);
        Ok(found)
    }

    async fn delete_thread(&self, tenant: &Tenant, id: &ThreadId) -> Result<(), StoreError> {
        // What `THREAD_CASCADE` names for the SQL backends, in this store's
        // maps: the thread's runs with their chunks, run events,
        // deliveries, push configurations and grants.
        let mut runs = self.lock();
        let mut threads = self.lock_threads();
        threads
            .remove(&(tenant.clone(), id.clone()))
            .ok_or(StoreError::NotFound)?;
        runs.retain(|_, (run, _)| {
            !(run.tenant == *tenant && run.thread.as_ref().is_some_and(|link| link.id == *id))
        });
        self.lock_run_events()
            .log
            .retain(|event| runs.contains_key(&event.run_id));
        let mut ledger = self.lock_ledger();
        ledger
            .deliveries
            .retain(|delivery| runs.contains_key(&delivery.run_id));
        ledger
            .push_configs
            .retain(|(run_id, _), _| runs.contains_key(run_id));
        ledger.grants.retain(|grant| runs.contains_key(&grant.run_id));
        Ok(())
    }

    async fn idle_threads(
        &self,
        cutoff: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Tenant, ThreadId)>, StoreError> {
        let runs = self.lock();
        let mut idle: Vec<(Timestamp, Tenant, ThreadId)> = self
            .lock_threads()
            .values()
            .map(|thread| with_latest(&runs, thread))
            .filter(|thread| {
                thread.last_activity() < cutoff
                    && thread
                        .latest
                        .is_none_or(|latest| latest.status != RunStatus::Running)
            })
            .map(|thread| (thread.last_activity(), thread.tenant, thread.id))
            .collect();
        idle.sort_unstable();
        Ok(idle
            .into_iter()
            .take(limit)
            .map(|(_, tenant, id)| (tenant, id))
            .collect())
    }
}

#[async_trait]
impl RunEventLog for MemoryStore {
    async fn read_run_events(
        &self,
        tenant: Option<&Tenant>,
        after: EventPosition,
        limit: usize,
    ) -> Result<RunEventPage, StoreError> {
        let run_events = self.lock_run_events();
        let first = run_events.log.partition_point(|event| event.position <= after);
        let events = run_events.log[first..]
            .iter()
            .filter(|event| tenant.is_none_or(|tenant| event.tenant == *tenant))
            .take(limit)
            .cloned()
            .collect();
        Ok(RunEventPage {
            events,
            settling: false,
        })
    }

    async fn run_events_head(&self) -> Result<EventPosition, StoreError> {
        let last = self.lock_run_events().last;
        Ok(EventPosition {
            major: 0,
            minor: last,
        })
    }

    fn run_events_signal(&self) -> watch::Receiver<()> {
        self.signal.subscribe()
    }
}

#[async_trait]
impl DeliveryLedger for MemoryStore {
    async fn ledger_cursor(&self, webhook: &str, start: EventPosition) -> Result<EventPosition, StoreError> {
        Ok(*self
            .lock_ledger()
            .cursors
            .entry(webhook.to_owned())
            .or_insert(start))
    }

    async fn enqueue_deliveries(&self, webhook: &str, enqueue: &Enqueue<'_>) -> Result<bool, StoreError> {
        let (from, to, now) = (enqueue.from, enqueue.to, enqueue.now);
        let deliveries = enqueue.deliveries;
        let mut ledger = self.lock_ledger();
        if ledger.cursors.get(webhook) != Some(&from) {
            return Ok(false);
        }
        let taken = deliveries.iter().find(|new| {
            ledger.deliveries.iter().any(|stored| {
                stored.webhook == webhook && stored.event == new.event && stored.target == new.target
            })
        });
        if let Some(taken) = taken {
            return Err(StoreError::Backend(format!(
                "webhook {webhook:?} already has a delivery of event {:?}",
                taken.event
            )));
        }
        ledger.cursors.insert(webhook.to_owned(), to);
        for new in deliveries {
            ledger.last_id += 1;
            let id = ledger.last_id;
            ledger.deliveries.push(StoredDelivery {
                id,
                webhook: webhook.to_owned(),
                run_id: new.run_id,
                event: new.event,
                target: new.target.clone(),
                pending: true,
                attempts: 0,
                enqueued_at: now,
                next_attempt_at: now,
                lease_expires_at: None,
            });
        }
        Ok(true)
    }

    async fn claim_deliveries(&self, webhook: &str, claim: &Claim<'_>) -> Result<DeliveryClaim, StoreError> {
        let (now, lease_until, limit) = (claim.now, claim.lease_until, claim.limit);
        let run_events = self.lock_run_events();
        let mut ledger = self.lock_ledger();
        let mut free: Vec<(Timestamp, DeliveryId, usize)> = ledger
            .deliveries
            .iter()
            .enumerate()
            .filter(|(_, delivery)| delivery.pending && delivery.webhook == webhook)
            .filter(|(_, delivery)| !ledger.held_back(delivery))
            .map(|(index, delivery)| (delivery.due_at(), delivery.id, index))
            .collect();
        free.sort_unstable();
        let mut claim = DeliveryClaim::default();
        for (due_at, _, index) in free {
            if due_at > now || claim.deliveries.len() == limit {
                continue;
            }
            let delivery = &mut ledger.deliveries[index];
            let Ok(found) = run_events
                .log
                .binary_search_by(|event| event.position.cmp(&delivery.event))
            else {
                return Err(StoreError::Corrupt(format!(
                    "delivery {} names event {:?}, which is not stored",
                    delivery.id, delivery.event
                )));
            };
            delivery.attempts += 1;
            delivery.lease_expires_at = Some(lease_until);
            claim.deliveries.push(ClaimedDelivery {
                id: delivery.id,
                attempt: delivery.attempts,
                enqueued_at: delivery.enqueued_at,
                event: run_events.log[found].clone(),
                target: delivery.target.clone(),
            });
        }
        claim.next_due = ledger
            .deliveries
            .iter()
            .filter(|delivery| delivery.pending && delivery.webhook == webhook)
            .filter(|delivery| !ledger.held_back(delivery))
            .map(StoredDelivery::due_at)
            .min();
        Ok(claim)
    }

    async fn finish_delivery(
        &self,
        id: DeliveryId,
        attempt: u32,
        outcome: &AttemptOutcome,
        _now: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut ledger = self.lock_ledger();
        let Some(delivery) = ledger
            .deliveries
            .iter_mut()
            .find(|delivery| delivery.id == id && delivery.pending && delivery.attempts == attempt)
        else {
            return Ok(false);
        };
        delivery.lease_expires_at = None;
        match outcome {
            AttemptOutcome::Delivered | AttemptOutcome::Failed { .. } => delivery.pending = false,
            AttemptOutcome::Retry { at, .. } => delivery.next_attempt_at = *at,
        }
        Ok(true)
    }

    async fn pending_deliveries(&self) -> Result<BTreeMap<String, u64>, StoreError> {
        let mut counts = BTreeMap::new();
        for delivery in self.lock_ledger().deliveries.iter().filter(|d| d.pending) {
            *counts.entry(delivery.webhook.clone()).or_insert(0) += 1;
        }
        Ok(counts)
    }
}

#[async_trait]
impl PushConfigStore for MemoryStore {
    async fn put_push_config(&self, config: &PushConfig) -> Result<(), StoreError> {
        self.lock_ledger()
            .push_configs
            .insert((config.run_id, config.id.clone()), config.clone());
        Ok(())
    }

    async fn push_configs(&self, run_ids: &[RunId]) -> Result<Vec<PushConfig>, StoreError> {
        let mut run_ids = run_ids.to_vec();
        run_ids.sort_unstable();
        run_ids.dedup();
        let ledger = self.lock_ledger();
        Ok(run_ids
            .iter()
            .flat_map(|&run_id| {
                ledger
                    .push_configs
                    .range((run_id, String::new())..)
                    .take_while(move |((run, _), _)| *run == run_id)
                    .map(|(_, config)| config.clone())
            })
            .collect())
    }

    async fn delete_push_config(&self, run_id: RunId, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .lock_ledger()
            .push_configs
            .remove(&(run_id, id.to_owned()))
            .is_some())
    }
}

#[async_trait]
impl GrantStore for MemoryStore {
    async fn put_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        self.lock_ledger().grants.push(grant.clone());
        Ok(())
    }

    async fn grants(
        &self,
        tenant: &Tenant,
        run: Option<RunId>,
        thread: Option<&ThreadId>,
    ) -> Result<Vec<Grant>, StoreError> {
        let ledger = self.lock_ledger();
        let mut grants: Vec<Grant> = ledger
            .grants
            .iter()
            .filter(|grant| grant.tenant == *tenant)
            .filter(|grant| match grant.scope {
                GrantScope::Run => Some(grant.run_id) == run,
                GrantScope::Thread => grant.thread_id.is_some() && grant.thread_id.as_ref() == thread,
            })
            .cloned()
            .collect();
        grants.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(grants)
    }

    async fn delete_grant(&self, tenant: &Tenant, id: &str) -> Result<bool, StoreError> {
        let mut ledger = self.lock_ledger();
        let before = ledger.grants.len();
        ledger
            .grants
            .retain(|grant| !(grant.tenant == *tenant && grant.id == id));
        Ok(ledger.grants.len() < before)
    }
}

#[async_trait]
impl Presence for MemoryStore {
    /// Nothing outside this process can reach it.
    fn sharing(&self) -> Sharing {
        Sharing::Owned
    }

    /// One process owns the store: nobody else looks for its orphans.
    async fn register_replica(&self, _replica_id: &str) -> Result<(), StoreError> {
        Ok(())
    }

    /// Memory is always reachable and always takes writes.
    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
}
