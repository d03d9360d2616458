//! How many streams each tenant has open in this process, across every
//! surface, against `limits.max_streams_per_tenant`. The stream gate takes
//! a slot when it admits a stream (or refuses it, before anything runs);
//! the slot is given back when the stream ends, however it ends. Each
//! process counts its own streams.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::domain::Tenant;

/// The open streams of each tenant, and how many one may have.
#[derive(Debug)]
pub(super) struct TenantStreams {
    max: usize,
    counts: Mutex<HashMap<Tenant, usize>>,
}

/// One open stream of a tenant; given back when dropped.
#[derive(Debug)]
pub(super) struct StreamSlot {
    streams: Arc<TenantStreams>,
    tenant: Tenant,
}

/// A tenant that has as many streams open as it may.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Full {
    pub tenant: Tenant,
    pub max: usize,
}

impl TenantStreams {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max,
            counts: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Tenant, usize>> {
        // Every critical section is one insert or one decrement.
        self.counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A slot for one more stream of `tenant`, if it has fewer than the
    /// most it may.
    pub(super) fn acquire(self: &Arc<Self>, tenant: &Tenant) -> Result<StreamSlot, Full> {
        let mut counts = self.lock();
        let count = counts.entry(tenant.clone()).or_insert(0);
        if *count >= self.max {
            return Err(Full {
                tenant: tenant.clone(),
                max: self.max,
            });
        }
        *count += 1;
        Ok(StreamSlot {
            streams: Arc::clone(self),
            tenant: tenant.clone(),
        })
    }

    /// Streams of `tenant` open now.
    #[cfg(test)]
    fn open(&self, tenant: &Tenant) -> usize {
        self.lock().get(tenant).copied().unwrap_or(0)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut counts = self.streams.lock();
        if let Some(count) = counts.get_mut(&self.tenant) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_per_tenant_and_given_back() {
        let streams = Arc::new(TenantStreams::new(2));
        let acme = Tenant::new("acme").unwrap();
        let globex = Tenant::new("globex").unwrap();
        let first = streams.acquire(&acme).expect("one");
        let _second = streams.acquire(&acme).expect("two: the most");
        assert_eq!(
            streams.acquire(&acme).unwrap_err(),
            Full {
                tenant: acme.clone(),
                max: 2
            }
        );
        let _theirs = streams.acquire(&globex).expect("another tenant's own");
        drop(first);
        assert_eq!(streams.open(&acme), 1);
        let _third = streams.acquire(&acme).expect("a slot given back");
    }
}
