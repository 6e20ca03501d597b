//! When to try a delivery again (pure): exponential backoff with jitter, `Retry-After`
//! honoured, and an end after about three days.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// The knobs of the retry schedule.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// The first delay; each failure doubles it.
    pub base: Duration,
    /// The longest delay.
    pub max: Duration,
    /// How long after its start a delivery keeps being retried.
    pub window: Duration,
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Try again at this time.
    RetryAt(DateTime<Utc>),
    /// Retries are over.
    Exhausted,
}

/// The longest `Retry-After` askloop waits for: a receiver cannot park a delivery for longer.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(24 * 3600);

/// The delay after the `failures`-th failure (1-based), before jitter: `base · 2^(failures-1)`,
/// at most `max`.
pub fn backoff(policy: &RetryPolicy, failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(30);
    policy
        .base
        .saturating_mul(1u32 << doublings)
        .min(policy.max)
}

/// Decide what follows the `failures`-th failed attempt of a delivery whose retries started at
/// `retry_from`. `jitter` in [0, 1) scales the delay into its upper half (so retries of many
/// deliveries spread out but never come sooner than half the backoff); a `Retry-After` longer
/// than that wins, up to [`RETRY_AFTER_CAP`].
pub fn after_failure(
    policy: &RetryPolicy,
    failures: u32,
    retry_after: Option<Duration>,
    retry_from: DateTime<Utc>,
    now: DateTime<Utc>,
    jitter: f64,
) -> AfterFailure {
    let window = chrono::Duration::from_std(policy.window).unwrap_or(chrono::Duration::MAX);
    let ends = retry_from
        .checked_add_signed(window)
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    if now >= ends {
        return AfterFailure::Exhausted;
    }
    let full = backoff(policy, failures);
    let jittered = full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
    let delay = match retry_after {
        Some(asked) => jittered.max(asked.min(RETRY_AFTER_CAP)),
        None => jittered,
    };
    let at = now
        .checked_add_signed(chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::MAX))
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    if at >= ends {
        // The last chance comes at the end of the window, not never.
        AfterFailure::RetryAt(ends)
    } else {
        AfterFailure::RetryAt(at)
    }
}

/// A `Retry-After` header value: delay-seconds, or an HTTP date (relative to `now`).
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = DateTime::parse_from_rfc2822(value).ok()?;
    Some(
        (at.with_timezone(&Utc) - now)
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}

/// Whether an HTTP status means the agent took the event.
pub fn is_delivered(status: u16) -> bool {
    (200..300).contains(&status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            base: Duration::from_secs(10),
            max: Duration::from_secs(6 * 3600),
            window: Duration::from_secs(72 * 3600),
        }
    }

    fn at(h: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 0, 0, 0)
            .single()
            .expect("a time")
            + chrono::Duration::hours(h)
    }

    #[test]
    fn the_backoff_doubles_from_the_base_up_to_the_cap() {
        let p = policy();
        assert_eq!(backoff(&p, 1), Duration::from_secs(10));
        assert_eq!(backoff(&p, 2), Duration::from_secs(20));
        assert_eq!(backoff(&p, 5), Duration::from_secs(160));
        assert_eq!(backoff(&p, 40), Duration::from_secs(6 * 3600));
    }

    #[test]
    fn jitter_keeps_the_delay_between_half_and_all_of_the_backoff() {
        let p = policy();
        for (jitter, seconds) in [(0.0, 10), (0.5, 15), (1.0, 20)] {
            let AfterFailure::RetryAt(when) = after_failure(&p, 2, None, at(0), at(0), jitter)
            else {
                panic!("not exhausted");
            };
            assert_eq!((when - at(0)).num_seconds(), seconds, "jitter {jitter}");
        }
    }

    #[test]
    fn a_longer_retry_after_wins_and_is_capped_at_a_day() {
        let p = policy();
        let asked = after_failure(&p, 1, Some(Duration::from_secs(120)), at(0), at(0), 0.0);
        assert_eq!(
            asked,
            AfterFailure::RetryAt(at(0) + chrono::Duration::seconds(120))
        );
        let shorter = after_failure(&p, 1, Some(Duration::from_secs(1)), at(0), at(0), 0.0);
        assert_eq!(
            shorter,
            AfterFailure::RetryAt(at(0) + chrono::Duration::seconds(5))
        );
        let greedy = after_failure(
            &p,
            1,
            Some(Duration::from_secs(10 * 86_400)),
            at(0),
            at(0),
            0.0,
        );
        assert_eq!(greedy, AfterFailure::RetryAt(at(24)));
    }

    #[test]
    fn retries_end_about_three_days_after_they_start() {
        let p = policy();
        assert_eq!(
            after_failure(&p, 20, None, at(0), at(72), 0.5),
            AfterFailure::Exhausted
        );
        // Just before the end, the last retry lands on the end rather than past it.
        assert_eq!(
            after_failure(&p, 20, None, at(0), at(71), 0.9),
            AfterFailure::RetryAt(at(72))
        );
    }

    #[test]
    fn the_schedule_makes_about_twenty_attempts_in_three_days() {
        let p = policy();
        let (mut now, mut failures) = (at(0), 0);
        while let AfterFailure::RetryAt(next) =
            after_failure(&p, failures + 1, None, at(0), now, 1.0)
        {
            failures += 1;
            now = next;
        }
        assert!((15..=30).contains(&failures), "{failures} retries");
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = Utc
            .with_ymd_and_hms(2026, 11, 29, 12, 0, 0)
            .single()
            .expect("a time");
        assert_eq!(parse_retry_after("30", now), Some(Duration::from_secs(30)));
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 12:01:00 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Sun, 29 Nov 2026 11:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn only_2xx_counts_as_delivered() {
        assert!(is_delivered(200) && is_delivered(204));
        assert!(!is_delivered(301) && !is_delivered(429) && !is_delivered(500));
    }
}
