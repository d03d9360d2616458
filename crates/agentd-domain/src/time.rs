//! Wall-clock timestamps as stored and streamed: microseconds since the Unix
//! epoch. Never used for measuring durations (use `Instant` for that).

use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time, in microseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        Self(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
    }

    /// This time plus `duration` (saturating).
    pub fn after(self, duration: Duration) -> Self {
        let micros = i64::try_from(duration.as_micros()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(micros))
    }

    /// This time minus `duration` (saturating).
    pub fn before(self, duration: Duration) -> Self {
        let micros = i64::try_from(duration.as_micros()).unwrap_or(i64::MAX);
        Self(self.0.saturating_sub(micros))
    }

    /// Whole seconds and the remaining nanoseconds, as protobuf wants them.
    pub fn seconds_nanos(self) -> (i64, i32) {
        let seconds = self.0.div_euclid(1_000_000);
        let nanos = self.0.rem_euclid(1_000_000) * 1_000;
        (seconds, nanos as i32)
    }
}
