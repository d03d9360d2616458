//! When a failed request is tried again: which statuses are worth another
//! try, how long the provider asked us to wait (Retry-After, in seconds or
//! as an HTTP date, or OpenAI's `retry-after-ms`), and the exponential
//! backoff with jitter used when it did not say. Pure functions, no I/O.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::StatusCode;

/// The longest backoff between two tries when the provider gives no hint.
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A provider that asks for a longer wait than this is not waited for: the
/// step fails at once with the provider's message.
pub(super) const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Rate limits and server-side failures may pass; other answers will not.
pub(super) fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || (status.is_server_error()
            && status != StatusCode::NOT_IMPLEMENTED
            && status != StatusCode::HTTP_VERSION_NOT_SUPPORTED)
}

/// The wait the provider asked for, if it asked.
pub(super) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The backoff before try number `retry` (0 for the first retry): `base`
/// doubled each time, capped at [`MAX_BACKOFF`], then a random point in
/// its upper half, so that clients that failed together spread out.
pub(super) fn backoff(base: Duration, retry: u32) -> Duration {
    let ceiling = base
        .checked_mul(1u32.checked_shl(retry.min(16)).unwrap_or(u32::MAX))
        .unwrap_or(MAX_BACKOFF)
        .min(MAX_BACKOFF);
    ceiling.mul_f64(0.5 + fastrand::f64() / 2.0)
}

/// How long to wait before retry number `retry`, or `None` when the
/// provider asked for a wait longer than we hold a step for.
pub(super) fn delay(headers: &HeaderMap, base: Duration, retry: u32) -> Option<Duration> {
    match retry_after(headers, SystemTime::now()) {
        Some(wait) if wait > MAX_RETRY_AFTER => None,
        Some(wait) => Some(wait),
        None => Some(backoff(base, retry)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn rate_limits_and_server_errors_are_retried() {
        for code in [429, 500, 502, 503, 504, 529] {
            assert!(is_retryable(StatusCode::from_u16(code).unwrap()), "{code}");
        }
        for code in [400, 401, 403, 404, 413, 422, 501] {
            assert!(!is_retryable(StatusCode::from_u16(code).unwrap()), "{code}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")]), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:07 GMT")]), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "Wed, 21 Oct 2015 07:27:00 GMT")]), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3"), ("retry-after-ms", "250")]), now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn backoff_doubles_within_bounds() {
        let base = Duration::from_millis(100);
        for retry in 0..40 {
            let ceiling = (base * 2u32.pow(retry.min(16))).min(MAX_BACKOFF);
            for _ in 0..20 {
                let wait = backoff(base, retry);
                assert!(wait >= ceiling / 2 && wait <= ceiling, "retry {retry}: {wait:?}");
            }
        }
    }

    #[test]
    fn a_long_retry_after_is_not_waited_for() {
        let base = Duration::from_millis(100);
        assert_eq!(delay(&headers(&[("retry-after", "3600")]), base, 0), None);
        assert_eq!(
            delay(&headers(&[("retry-after", "2")]), base, 0),
            Some(Duration::from_secs(2))
        );
        assert!(delay(&HeaderMap::new(), base, 0).unwrap() <= base);
    }
}
