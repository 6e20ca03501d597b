//! Where a planned notification goes (docs/contract.md#reaching-operators): at once, in a
//! digest, after the person's quiet hours, or nowhere — from what they asked for, the question's
//! urgency and the time in their zone. Pure: the mail worker reads the rows and applies this.
//! Urgency is the stored vocabulary of questions (`entity::agent_questions::Urgency`).

use chrono::{DateTime, Duration, NaiveTime, TimeZone, Timelike, Utc};
use entity::agent_questions::Urgency;

/// How the urgencies not mailed at once are gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Digest {
    /// One mail an hour, on the hour.
    Hourly,
    /// One mail a day, at 08:00 in the person's time zone.
    Daily,
    /// Not mailed.
    Off,
}

impl Digest {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Digest::Hourly => "hourly",
            Digest::Daily => "daily",
            Digest::Off => "off",
        }
    }

    /// As stored; anything else is hourly.
    pub fn parse(raw: &str) -> Self {
        match raw {
            "daily" => Digest::Daily,
            "off" => Digest::Off,
            _ => Digest::Hourly,
        }
    }
}

/// The urgency as stored in a preference.
pub fn urgency_name(urgency: Urgency) -> &'static str {
    match urgency {
        Urgency::Low => "low",
        Urgency::Normal => "normal",
        Urgency::High => "high",
    }
}

/// The urgencies of a stored list, most urgent first, each once; unknown words are skipped.
pub fn parse_urgencies(raw: &str) -> Vec<Urgency> {
    let mut found: Vec<Urgency> = raw
        .split(',')
        .filter_map(|part| match part.trim() {
            "low" => Some(Urgency::Low),
            "normal" => Some(Urgency::Normal),
            "high" => Some(Urgency::High),
            _ => None,
        })
        .collect();
    found.sort_by_key(|u| std::cmp::Reverse(rank(*u)));
    found.dedup();
    found
}

/// How urgent, for sorting: high is the most.
pub fn rank(urgency: Urgency) -> u8 {
    match urgency {
        Urgency::Low => 0,
        Urgency::Normal => 1,
        Urgency::High => 2,
    }
}

/// A person's settings as the planner reads them.
#[derive(Debug, Clone)]
pub struct Recipient {
    /// The time zone.
    pub tz: chrono_tz::Tz,
    /// Quiet hours (start, end minutes).
    pub quiet: Option<(i32, i32)>,
    /// Whether quiet hours hold high urgency too.
    pub quiet_includes_high: bool,
}

impl Recipient {
    /// When quiet hours that hold `now` end, if they do.
    pub fn quiet_until(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let (start, end) = self.quiet?;
        let local = now.with_timezone(&self.tz);
        let minute = (local.hour() * 60 + local.minute()) as i32;
        let inside = if start < end {
            (start..end).contains(&minute)
        } else {
            minute >= start || minute < end
        };
        if !inside {
            return None;
        }
        let end_time = NaiveTime::from_hms_opt((end / 60) as u32, (end % 60) as u32, 0)?;
        let mut date = local.date_naive();
        if minute >= end {
            date = date.succ_opt()?;
        }
        Some(local_instant(self.tz, date.and_time(end_time)))
    }

    /// When a digest gathering `now` goes out.
    pub fn next_digest(&self, digest: Digest, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = now.with_timezone(&self.tz);
        let at = match digest {
            Digest::Off => return None,
            Digest::Hourly => {
                let hour = local.date_naive().and_hms_opt(local.hour(), 0, 0)?;
                local_instant(self.tz, hour) + Duration::hours(1)
            }
            Digest::Daily => {
                let eight = NaiveTime::from_hms_opt(8, 0, 0)?;
                let mut date = local.date_naive();
                if local.time() >= eight {
                    date = date.succ_opt()?;
                }
                local_instant(self.tz, date.and_time(eight))
            }
        };
        // A digest due in quiet hours waits for their end.
        Some(self.quiet_until(at).unwrap_or(at))
    }
}

/// A local wall-clock time in `tz` as an instant (a time skipped by a clock change is read an
/// hour later; a repeated one, the first time).
fn local_instant(tz: chrono_tz::Tz, local: chrono::NaiveDateTime) -> DateTime<Utc> {
    tz.from_local_datetime(&local)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(local + Duration::hours(1)))
                .earliest()
        })
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| local.and_utc())
}

/// Where a planned notification goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On its own, at this time.
    Alone(DateTime<Utc>),
    /// In a digest, at this time.
    Digest(DateTime<Utc>),
    /// Not sent.
    Dropped,
}

/// What a person asked for about one niche, as the planner reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// `false`: no mail about it at all.
    pub enabled: bool,
    /// The urgencies mailed at once.
    pub immediate: Vec<Urgency>,
    /// How the rest are gathered.
    pub digest: Digest,
}

impl Default for Wanted {
    /// What a person who set nothing gets: high at once, the rest hourly.
    fn default() -> Self {
        Self {
            enabled: true,
            immediate: vec![Urgency::High],
            digest: Digest::Hourly,
        }
    }
}

impl Wanted {
    /// From the stored words (`immediate` a comma-separated list of urgencies).
    pub fn from_stored(enabled: bool, immediate: &str, digest: &str) -> Self {
        Self {
            enabled,
            immediate: parse_urgencies(immediate),
            digest: Digest::parse(digest),
        }
    }
}

/// Place a notification about a question of `urgency` for `recipient`, who wants `wanted`, for
/// `reason`, at `now`.
pub fn place(
    recipient: &Recipient,
    wanted: &Wanted,
    urgency: Urgency,
    reason: &str,
    now: DateTime<Utc>,
) -> Placement {
    if !wanted.enabled {
        return Placement::Dropped;
    }
    // An escalation overrides digests and quiet hours.
    if reason != "waiting" {
        return Placement::Alone(now);
    }
    if wanted.immediate.contains(&urgency) {
        let held = urgency != Urgency::High || recipient.quiet_includes_high;
        return match recipient.quiet_until(now) {
            Some(until) if held => Placement::Alone(until),
            _ => Placement::Alone(now),
        };
    }
    match recipient.next_digest(wanted.digest, now) {
        Some(at) => Placement::Digest(at),
        None => Placement::Dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("time")
            .with_timezone(&Utc)
    }

    fn paris(quiet: Option<(i32, i32)>, high: bool) -> Recipient {
        Recipient {
            tz: chrono_tz::Europe::Paris,
            quiet,
            quiet_includes_high: high,
        }
    }

    #[test]
    fn quiet_hours_across_midnight_end_the_next_morning_in_the_persons_zone() {
        let r = paris(Some((22 * 60, 7 * 60)), false);
        // 23:30 in Paris (UTC+1 in December) is inside; they end at 07:00 Paris, 06:00 UTC.
        assert_eq!(
            r.quiet_until(at("2026-12-01T22:30:00Z")),
            Some(at("2026-12-02T06:00:00Z"))
        );
        // 03:00 Paris, the same night after midnight.
        assert_eq!(
            r.quiet_until(at("2026-12-02T02:00:00Z")),
            Some(at("2026-12-02T06:00:00Z"))
        );
        // 12:00 Paris is outside.
        assert_eq!(r.quiet_until(at("2026-12-02T11:00:00Z")), None);
    }

    #[test]
    fn placing_follows_urgency_digest_and_quiet_hours() {
        let night = at("2026-12-01T23:00:00Z"); // 00:00 in Paris
        let quiet = paris(Some((22 * 60, 7 * 60)), false);
        let morning = at("2026-12-02T06:00:00Z");
        // High is sent at once by default, quiet hours or not (unless they include high).
        assert_eq!(
            place(&quiet, &Wanted::default(), Urgency::High, "waiting", night),
            Placement::Alone(night)
        );
        assert_eq!(
            place(
                &paris(Some((22 * 60, 7 * 60)), true),
                &Wanted::default(),
                Urgency::High,
                "waiting",
                night
            ),
            Placement::Alone(morning)
        );
        // Normal goes to the hourly digest, which waits for the end of quiet hours.
        assert_eq!(
            place(
                &quiet,
                &Wanted::default(),
                Urgency::Normal,
                "waiting",
                night
            ),
            Placement::Digest(morning)
        );
        // Without quiet hours, the next full hour.
        let plain = paris(None, false);
        assert_eq!(
            place(
                &plain,
                &Wanted::default(),
                Urgency::Low,
                "waiting",
                at("2026-12-01T10:20:00Z")
            ),
            Placement::Digest(at("2026-12-01T11:00:00Z"))
        );
        // An escalation is sent at once whatever the hour.
        assert_eq!(
            place(&quiet, &Wanted::default(), Urgency::Low, "escalated", night),
            Placement::Alone(night)
        );
        // Off is off, escalation included.
        let off = Wanted::from_stored(false, "high", "hourly");
        assert_eq!(
            place(&plain, &off, Urgency::High, "escalated", night),
            Placement::Dropped
        );
        // A daily digest goes at 08:00 in their zone; a digest that is off drops the rest.
        let daily = Wanted::from_stored(true, "high", "daily");
        assert_eq!(
            place(
                &plain,
                &daily,
                Urgency::Normal,
                "waiting",
                at("2026-12-01T10:00:00Z")
            ),
            Placement::Digest(at("2026-12-02T07:00:00Z"))
        );
        let no_digest = Wanted::from_stored(true, "high", "off");
        assert_eq!(
            place(&plain, &no_digest, Urgency::Normal, "waiting", night),
            Placement::Dropped
        );
    }
}
