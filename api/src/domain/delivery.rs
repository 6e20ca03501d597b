//! When to try a delivery again (pure): exponential backoff with jitter, `Retry-After`
//! honoured, and an end after about three days; when to stop trying an endpoint for a while
//! (its circuit breaker); and how often a person may send a webhook's test event.

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

/// When an endpoint that keeps not answering is left alone for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    /// Attempts in a row that got no answer within the timeout before it opens.
    pub failures: u32,
    /// How long it stays open before one probe is sent.
    pub cooldown: Duration,
}

/// Where an endpoint's breaker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Sent to as usual.
    Closed,
    /// Not sent to until its cooldown is over; its deliveries wait, untried.
    Open,
    /// The cooldown is over: one delivery at a time probes it; an answer closes the breaker,
    /// no answer opens it again.
    Probing,
}

/// One endpoint's circuit breaker: an endpoint that keeps timing out is slowed down (its
/// deliveries wait without an attempt), not the queue. Only an attempt that waited out the
/// timeout counts; an endpoint that answers at once, even with an error, or refuses the
/// connection at once, holds nothing up and is left to the retry schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker<T> {
    no_answers: u32,
    open_until: Option<T>,
}

impl<T> Default for Breaker<T> {
    fn default() -> Self {
        Self {
            no_answers: 0,
            open_until: None,
        }
    }
}

impl<T: Copy + Ord + std::ops::Add<Duration, Output = T>> Breaker<T> {
    /// Where it is at `now`.
    pub fn state(&self, now: T) -> BreakerState {
        match self.open_until {
            None => BreakerState::Closed,
            Some(until) if now < until => BreakerState::Open,
            Some(_) => BreakerState::Probing,
        }
    }

    /// The endpoint answered (any HTTP status): it is closed again.
    pub fn answered(&mut self) {
        self.no_answers = 0;
        self.open_until = None;
    }

    /// An attempt got no answer at `now`: the breaker opens once `policy.failures` came in a
    /// row, and again after every probe that gets none.
    pub fn no_answer(&mut self, policy: &BreakerPolicy, now: T) {
        self.no_answers = self.no_answers.saturating_add(1);
        if self.no_answers >= policy.failures.max(1) {
            self.open_until = Some(now + policy.cooldown);
        }
    }

    /// Whether it remembers nothing (closed, no failures): such a breaker need not be kept.
    pub fn is_forgettable(&self) -> bool {
        self.no_answers == 0 && self.open_until.is_none()
    }
}

/// How many test events a person may send to their webhooks (docs/security.md#limits); the
/// defaults are those of the `ASKLOOP_WEBHOOK_TEST*` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestSendLimits {
    /// Per webhook, within `window`.
    pub per_webhook: u32,
    /// Per person, over all their webhooks, within `window`.
    pub per_person: u32,
    /// The sliding window both are counted over.
    pub window: Duration,
}

/// When one more test event may be sent, if not now: `sent` were sent within the window, the
/// oldest of them at `oldest`; past `limit`, the next may go once the oldest leaves the window
/// (at least a second from now, so a client told to wait never spins).
pub fn next_test_send(
    sent: u64,
    limit: u32,
    oldest: Option<DateTime<Utc>>,
    window: Duration,
    now: DateTime<Utc>,
) -> Option<Duration> {
    if sent < u64::from(limit) {
        return None;
    }
    let window = chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX);
    let frees = oldest.map_or(now, |at| at.checked_add_signed(window).unwrap_or(now));
    let wait = (frees - now).to_std().unwrap_or(Duration::ZERO);
    let whole_seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    Some(Duration::from_secs(whole_seconds.max(1)))
}

/// The four events askloop sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// An answer settled a question.
    AnswerCreated,
    /// An operator sent a question back for more research.
    ResearchRequested,
    /// A question's time ran out.
    QuestionExpired,
    /// A question was dismissed.
    QuestionDismissed,
    /// Enough people said a question lacks the context to answer it (once per round).
    NeedsContext,
    /// An admin verified a pending answer.
    AnswerVerified,
    /// An admin rejected a pending answer or reversed a verified one.
    AnswerRejected,
    /// A question nobody answered in time escalated a step.
    QuestionEscalated,
    /// Someone completed a task, at an actual cost.
    TaskCompleted,
    /// A knowledge entry the agent received was replaced by a newer version.
    KnowledgeSuperseded,
    /// A knowledge entry the agent received was retracted: its answer was rejected or reversed.
    KnowledgeRetracted,
    /// A several-answer question's answers agree enough on one option.
    Consensus,
    /// A several-answer question's answers do not agree enough; its admins are told.
    Disagreement,
}

impl EventType {
    /// The event's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::AnswerCreated => "expert_answer.created",
            EventType::ResearchRequested => "agent.research_requested",
            EventType::QuestionExpired => "expert_question.expired",
            EventType::QuestionDismissed => "expert_question.dismissed",
            EventType::NeedsContext => "expert_question.needs_context",
            EventType::AnswerVerified => "expert_answer.verified",
            EventType::AnswerRejected => "expert_answer.rejected",
            EventType::QuestionEscalated => "expert_question.escalated",
            EventType::TaskCompleted => "task.completed",
            EventType::KnowledgeSuperseded => "knowledge.superseded",
            EventType::KnowledgeRetracted => "knowledge.retracted",
            EventType::Consensus => "expert_question.consensus",
            EventType::Disagreement => "expert_question.disagreement",
        }
    }

    /// Every event askloop sends.
    pub const ALL: [EventType; 13] = [
        EventType::AnswerCreated,
        EventType::ResearchRequested,
        EventType::QuestionExpired,
        EventType::QuestionDismissed,
        EventType::NeedsContext,
        EventType::AnswerVerified,
        EventType::AnswerRejected,
        EventType::QuestionEscalated,
        EventType::TaskCompleted,
        EventType::KnowledgeSuperseded,
        EventType::KnowledgeRetracted,
        EventType::Consensus,
        EventType::Disagreement,
    ];

    /// The event named `name`, if askloop sends one by that name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == name)
    }
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

    fn breaker_policy() -> BreakerPolicy {
        BreakerPolicy {
            failures: 3,
            cooldown: Duration::from_secs(30),
        }
    }

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_breaker_opens_after_no_answers_in_a_row_and_probes_after_its_cooldown() {
        let p = breaker_policy();
        let mut breaker = Breaker::<Duration>::default();
        breaker.no_answer(&p, secs(1));
        breaker.no_answer(&p, secs(2));
        assert_eq!(
            breaker.state(secs(2)),
            BreakerState::Closed,
            "two are not yet a pattern"
        );
        breaker.no_answer(&p, secs(3));
        assert_eq!(breaker.state(secs(4)), BreakerState::Open);
        assert_eq!(breaker.state(secs(32)), BreakerState::Open);
        assert_eq!(breaker.state(secs(33)), BreakerState::Probing);
    }

    #[test]
    fn an_open_breaker_waits_its_cooldown_then_lets_one_probe_decide() {
        let p = breaker_policy();
        let mut breaker = Breaker::<Duration>::default();
        for at in 1..=3 {
            breaker.no_answer(&p, secs(at));
        }
        assert_eq!(breaker.state(secs(33)), BreakerState::Probing);
        // The probe gets no answer: open again for a whole cooldown.
        breaker.no_answer(&p, secs(40));
        assert_eq!(breaker.state(secs(69)), BreakerState::Open);
        assert_eq!(breaker.state(secs(70)), BreakerState::Probing);
        // The next one is answered: closed, and forgotten.
        breaker.answered();
        assert_eq!(breaker.state(secs(71)), BreakerState::Closed);
        assert!(breaker.is_forgettable());
    }

    #[test]
    fn any_answer_resets_the_count_of_no_answers() {
        let p = breaker_policy();
        let mut breaker = Breaker::<Duration>::default();
        breaker.no_answer(&p, secs(1));
        breaker.no_answer(&p, secs(2));
        breaker.answered();
        breaker.no_answer(&p, secs(3));
        breaker.no_answer(&p, secs(4));
        assert_eq!(breaker.state(secs(5)), BreakerState::Closed);
    }

    #[test]
    fn a_test_send_past_the_limit_waits_until_the_oldest_leaves_the_window() {
        let window = Duration::from_secs(600);
        assert_eq!(next_test_send(2, 3, Some(at(0)), window, at(0)), None);
        let now = at(0) + chrono::Duration::milliseconds(90_500);
        assert_eq!(
            next_test_send(3, 3, Some(at(0)), window, now),
            Some(Duration::from_secs(510)),
            "509.5 s, rounded up"
        );
        // Already out of the window (the count was read a moment before): soon, not never.
        assert_eq!(
            next_test_send(3, 3, Some(at(0)), window, at(1)),
            Some(Duration::from_secs(1))
        );
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
