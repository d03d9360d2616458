//! A gauge family, by one label, set at each scrape from a count the store
//! keeps (suspended runs by agent, pending deliveries by webhook). The
//! labels the server is configured with always show, at zero when the
//! store counts none, so that a dashboard plots 0 rather than no data;
//! other labels the store counts (an agent no longer configured) show while
//! it counts them. A scrape never sees a configured series missing, even
//! while another scrape sets the family.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, PoisonError};

use prometheus::IntGaugeVec;

pub(super) struct CountedGauge {
    family: IntGaugeVec,
    labels: Mutex<Labels>,
}

#[derive(Default)]
struct Labels {
    /// Shown whatever the store counts.
    configured: BTreeSet<String>,
    /// In the family now.
    shown: BTreeSet<String>,
}

impl CountedGauge {
    pub(super) fn new(family: IntGaugeVec) -> Self {
        Self {
            family,
            labels: Mutex::default(),
        }
    }

    /// `label` is configured: it shows from now on, at zero until a count
    /// says otherwise.
    pub(super) fn configure(&self, label: &str) {
        let mut labels = self.labels.lock().unwrap_or_else(PoisonError::into_inner);
        labels.configured.insert(label.to_owned());
        if labels.shown.insert(label.to_owned()) {
            self.family.with_label_values(&[label]).set(0);
        }
    }

    /// Sets the family to `counts`; configured labels missing from it, and
    /// only those, show zero.
    pub(super) fn set(&self, counts: &BTreeMap<String, u64>) {
        let mut labels = self.labels.lock().unwrap_or_else(PoisonError::into_inner);
        let shown: BTreeSet<String> = labels.configured.iter().chain(counts.keys()).cloned().collect();
        for label in &shown {
            let count = counts.get(label).copied().unwrap_or(0);
            self.family
                .with_label_values(&[label.as_str()])
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        for gone in labels.shown.difference(&shown) {
            // Shown, so present: removing it cannot fail.
            let _ = self.family.remove_label_values(&[gone.as_str()]);
        }
        labels.shown = shown;
    }
}
