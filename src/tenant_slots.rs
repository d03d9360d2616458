//! How many of something each tenant holds in this process, against a
//! most it may: the runs it has executing (`limits.max_concurrent_runs_per_tenant`,
//! the runtime's) and the streams it has open
//! (`limits.max_streams_per_tenant`, the door's stream gate). A slot is
//! taken before the thing starts, or refused, and given back when it is
//! dropped, however the thing ends. Each process counts its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::domain::Tenant;

/// What each tenant holds now.
#[derive(Debug, Default)]
pub struct TenantSlots {
    counts: Mutex<HashMap<Tenant, usize>>,
}

/// One thing a tenant holds; given back when dropped.
#[derive(Debug)]
pub struct TenantSlot {
    slots: Arc<TenantSlots>,
    tenant: Tenant,
}

impl TenantSlots {
    fn lock(&self) -> MutexGuard<'_, HashMap<Tenant, usize>> {
        // Every critical section is one insert or one decrement, which
        // leaves the map whole even if a holder panicked.
        self.counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A slot for one more of `tenant`'s, if it holds fewer than `max`.
    pub fn acquire(self: &Arc<Self>, tenant: &Tenant, max: usize) -> Option<TenantSlot> {
        let mut counts = self.lock();
        let count = counts.entry(tenant.clone()).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(TenantSlot {
            slots: Arc::clone(self),
            tenant: tenant.clone(),
        })
    }

    /// How many `tenant` holds now.
    pub fn held(&self, tenant: &Tenant) -> usize {
        self.lock().get(tenant).copied().unwrap_or(0)
    }
}

impl Drop for TenantSlot {
    fn drop(&mut self) {
        let mut counts = self.slots.lock();
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
        let slots = Arc::new(TenantSlots::default());
        let (acme, globex) = (Tenant::new("acme").unwrap(), Tenant::new("globex").unwrap());
        let first = slots.acquire(&acme, 2).expect("one");
        let second = slots.acquire(&acme, 2).expect("two: the most");
        assert!(slots.acquire(&acme, 2).is_none(), "a third is refused");
        let theirs = slots.acquire(&globex, 2).expect("another tenant's own");
        drop(first);
        assert_eq!(slots.held(&acme), 1);
        let third = slots.acquire(&acme, 2).expect("a slot given back");
        drop((second, third, theirs));
        assert_eq!(slots.held(&acme), 0);
        assert_eq!(slots.held(&globex), 0);
        assert!(slots.lock().is_empty(), "no tenant is kept at zero");
    }
}
