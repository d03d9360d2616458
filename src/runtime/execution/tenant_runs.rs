//! How many runs each tenant has executing in this process, against
//! `limits.max_concurrent_runs_per_tenant`. A start or a Resume takes a
//! slot before it commits (or is refused with RESOURCE_EXHAUSTED, changing
//! nothing); the slot is given back when that execution ends (the run
//! suspends, finishes, fails or is cancelled). Suspended runs hold none.
//! Each process counts its own executions.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::domain::Tenant;
use crate::runtime::RuntimeError;

/// The executing runs of each tenant.
#[derive(Debug, Default)]
pub(in crate::runtime) struct TenantRuns {
    counts: Mutex<HashMap<Tenant, usize>>,
}

/// One executing run of a tenant; given back when dropped.
#[derive(Debug)]
pub(in crate::runtime) struct RunSlot {
    runs: Arc<TenantRuns>,
    tenant: Tenant,
}

impl TenantRuns {
    fn lock(&self) -> MutexGuard<'_, HashMap<Tenant, usize>> {
        // Every critical section is one insert or one decrement.
        self.counts
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A slot for one more run of `tenant`, if it has fewer than `max`.
    pub(in crate::runtime) fn acquire(
        self: &Arc<Self>,
        tenant: &Tenant,
        max: usize,
    ) -> Result<RunSlot, RuntimeError> {
        let mut counts = self.lock();
        let count = counts.entry(tenant.clone()).or_insert(0);
        if *count >= max {
            return Err(RuntimeError::TooManyRuns {
                tenant: tenant.to_string(),
                max,
            });
        }
        *count += 1;
        Ok(RunSlot {
            runs: Arc::clone(self),
            tenant: tenant.clone(),
        })
    }

    /// Runs of `tenant` executing now.
    #[cfg(test)]
    fn executing(&self, tenant: &Tenant) -> usize {
        self.lock().get(tenant).copied().unwrap_or(0)
    }
}

impl Drop for RunSlot {
    fn drop(&mut self) {
        let mut counts = self.runs.lock();
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
        let runs = Arc::new(TenantRuns::default());
        let (acme, globex) = (Tenant::new("acme").unwrap(), Tenant::new("globex").unwrap());
        let first = runs.acquire(&acme, 2).unwrap();
        let second = runs.acquire(&acme, 2).unwrap();
        assert!(matches!(
            runs.acquire(&acme, 2),
            Err(RuntimeError::TooManyRuns { max: 2, .. })
        ));
        let other = runs.acquire(&globex, 2).unwrap();
        drop(first);
        assert_eq!(runs.executing(&acme), 1);
        let third = runs.acquire(&acme, 2).unwrap();
        drop((second, third, other));
        assert_eq!(runs.executing(&acme), 0);
        assert_eq!(runs.executing(&globex), 0);
    }
}
