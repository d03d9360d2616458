//! When a failed delivery is tried again: exponential backoff (the first
//! retry after `retry_backoff`, each next one after twice as long, at most
//! `retry_max_backoff`) with jitter (each delay drawn between half of it
//! and all of it, so that retries of many deliveries spread out), until
//! `retry_for` after the delivery was enqueued; after that it has failed.

use std::time::Duration;

use crate::domain::Timestamp;

/// A webhook's retry schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetrySchedule {
    /// The delay before the first retry.
    pub backoff: Duration,
    /// The longest delay between two attempts.
    pub max_backoff: Duration,
    /// No attempt starts later than this after the delivery was enqueued
    /// (zero: one attempt only).
    pub retry_for: Duration,
}

impl Default for RetrySchedule {
    /// 5 s, 10 s, 20 s ... then hourly, for a day: about 35 attempts.
    fn default() -> Self {
        Self {
            backoff: Duration::from_secs(5),
            max_backoff: Duration::from_secs(3600),
            retry_for: Duration::from_secs(24 * 3600),
        }
    }
}

impl RetrySchedule {
    /// The delay after failed attempt number `attempt` (from 1), before
    /// jitter.
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(63);
        self.backoff
            .checked_mul(1u32 << doublings.min(31))
            .map_or(self.max_backoff, |delay| delay.min(self.max_backoff))
    }

    /// When the attempt after failed attempt `attempt` is due, for a
    /// delivery enqueued at `enqueued_at` that failed at `now`; `None` once
    /// the schedule is over. `at_least` is what the endpoint asked for
    /// (`Retry-After`); `jitter` (in `0.0..=1.0`) picks the delay between
    /// half of it and all of it.
    pub fn next_attempt(
        &self,
        attempt: u32,
        enqueued_at: Timestamp,
        now: Timestamp,
        at_least: Option<Duration>,
        jitter: f64,
    ) -> Option<Timestamp> {
        let delay = self.delay(attempt);
        let jittered = delay.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
        let wait = at_least.map_or(jittered, |asked| jittered.max(asked));
        let at = now.after(wait);
        (at <= enqueued_at.after(self.retry_for)).then_some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_most_and_jitter_stays_within_half() {
        let schedule = RetrySchedule::default();
        let delays: Vec<u64> = (1..=12).map(|n| schedule.delay(n).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600]);
        assert_eq!(schedule.delay(u32::MAX), Duration::from_secs(3600));
        let start = Timestamp(1_000_000_000_000);
        let low = schedule.next_attempt(3, start, start, None, 0.0).unwrap();
        let high = schedule.next_attempt(3, start, start, None, 1.0).unwrap();
        assert_eq!(low, start.after(Duration::from_secs(10)));
        assert_eq!(high, start.after(Duration::from_secs(20)));
    }

    #[test]
    fn the_schedule_ends_retry_for_after_the_delivery_was_enqueued() {
        let schedule = RetrySchedule::default();
        let start = Timestamp(1_000_000_000_000);
        let late = start.after(Duration::from_secs(24 * 3600 - 60));
        assert_eq!(schedule.next_attempt(30, start, late, None, 1.0), None);
        assert!(schedule.next_attempt(1, start, late, None, 1.0).is_some());
        // A day of attempts, about 35 of them.
        let (mut now, mut attempts) = (start, 1);
        while let Some(next) = schedule.next_attempt(attempts, start, now, None, 1.0) {
            now = next;
            attempts += 1;
        }
        assert!((33..=36).contains(&attempts), "{attempts} attempts");
        let once = RetrySchedule {
            retry_for: Duration::ZERO,
            ..schedule
        };
        assert_eq!(once.next_attempt(1, start, start, None, 0.0), None);
    }

    #[test]
    fn retry_after_is_honoured_within_the_schedule() {
        let schedule = RetrySchedule::default();
        let start = Timestamp(1_000_000_000_000);
        let asked = Duration::from_secs(120);
        let next = schedule.next_attempt(1, start, start, Some(asked), 0.0);
        assert_eq!(next, Some(start.after(asked)));
        let beyond = Duration::from_secs(2 * 24 * 3600);
        assert_eq!(schedule.next_attempt(1, start, start, Some(beyond), 0.0), None);
    }
}
