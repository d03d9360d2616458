//! What the search for orphaned runs finds (see
//! [`super::RunQueries::orphaned_runs`]): a running run that its lease holder
//! may no longer be executing, with what the store knows of that holder.
//! Only data: the runtime decides, after reading the run again, whether to
//! take it over.

use agentd_domain::RunId;

/// A running run that nobody may be executing any more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Orphan {
    pub id: RunId,
    /// What the store knew of the run's lease holder when it looked.
    pub holder: Holder,
}

impl Orphan {
    /// A run found by its expired lease alone.
    pub fn expired(id: RunId) -> Self {
        Self {
            id,
            holder: Holder::Unknown,
        }
    }
}

/// What a store knows of the replica that holds a run's lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// The store cannot tell whether the holder lives (it never registered,
    /// or the store does not keep track): the run is an orphan because its
    /// lease expired.
    Unknown,
    /// The holder's session lives, yet its lease expired: a process that
    /// is stuck or cannot write. Taking the run over fences it.
    Live,
    /// The session of the holder `owner` ended: its process is gone, and
    /// the run is an orphan whatever its lease says, for as long as `owner`
    /// still holds it.
    Gone { owner: String },
}

impl Holder {
    /// Every name [`Holder::as_str`] gives.
    pub const NAMES: [&'static str; 3] = ["unknown", "live", "gone"];

    /// Its name in logs and metrics.
    pub fn as_str(&self) -> &'static str {
        match self {
            Holder::Unknown => "unknown",
            Holder::Live => "live",
            Holder::Gone { .. } => "gone",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_holder_name_is_listed() {
        let holders = [Holder::Unknown, Holder::Live, Holder::Gone { owner: "a".into() }];
        let names: Vec<_> = holders.iter().map(Holder::as_str).collect();
        assert_eq!(names, Holder::NAMES);
    }
}
