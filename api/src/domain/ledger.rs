//! The ledger's arithmetic (pure): net of costs, splitting a net among shares so the parts sum
//! to it exactly, and where a monthly budget stands.

use chrono::{DateTime, Datelike, TimeZone, Utc};

pub use askloop_wire::limits::MAX_AMOUNT_MINOR;

/// The largest gross revenue one niche may book over its life (half of `i64::MAX`): a revenue
/// event that would pass it is refused, so the database's sums of a niche's events always fit.
pub const MAX_NICHE_GROSS_MINOR: i64 = i64::MAX / 2;

pub use askloop_wire::limits::amount_problem;

/// All of something, in basis points.
pub const WHOLE_BPS: u32 = 10_000;

/// The costs taken off a gross amount.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Costs {
    /// Payment processing.
    pub processing: i64,
    /// Network fees.
    pub network: i64,
    /// Infrastructure.
    pub infra: i64,
    /// Refunds.
    pub refund: i64,
}

/// Net = gross − costs, never below zero (saturating, so no input can wrap it).
pub fn net(gross: i64, costs: Costs) -> i64 {
    let total = costs
        .processing
        .saturating_add(costs.network)
        .saturating_add(costs.infra)
        .saturating_add(costs.refund);
    gross.saturating_sub(total).max(0)
}

/// Split `net` by `shares_bps` (each of the whole, summing to at most [`WHOLE_BPS`]): every
/// share is floored, and the platform gets the rest, so the parts sum to `net` exactly.
/// Returns the shares' amounts and the platform's.
///
/// Shares that sum past the whole are never meant to come here; should they, each share gets
/// at most what the ones before it left, so the parts still sum to `net`, none is negative and
/// nothing overflows.
pub fn allocate(net: i64, shares_bps: &[u32]) -> (Vec<i64>, i64) {
    let mut left = net.max(0);
    let parts: Vec<i64> = shares_bps
        .iter()
        .map(|&bps| {
            // i128: net · bps cannot overflow, and the floor is at most `net`.
            let part =
                i128::from(net.max(0)) * i128::from(bps.min(WHOLE_BPS)) / i128::from(WHOLE_BPS);
            let part = i64::try_from(part).unwrap_or(0).min(left);
            left -= part;
            part
        })
        .collect();
    (parts, left)
}

/// The budget month of `at` (`YYYY-MM`, UTC).
pub fn month_of(at: DateTime<Utc>) -> String {
    format!("{:04}-{:02}", at.year(), at.month())
}

/// When the budget month of `at` ends: the first instant of the next month, UTC.
pub fn resets_at(at: DateTime<Utc>) -> DateTime<Utc> {
    let (year, month) = if at.month() == 12 {
        (at.year() + 1, 1)
    } else {
        (at.year(), at.month() + 1)
    };
    Utc.with_ymd_and_hms(year, month, 1, 0, 0, 0)
        .single()
        .unwrap_or(at)
}

/// How a budget stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetState {
    /// Plenty left (or no limit).
    Ample,
    /// Less than a fifth left.
    Tight,
    /// Nothing left.
    Exhausted,
}

/// A niche's budget for a month.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The monthly limit; `None` is no limit.
    pub limit: Option<i64>,
    /// Charged this month.
    pub spent: i64,
    /// Reserved this month and neither charged nor released yet.
    pub reserved: i64,
}

impl Budget {
    /// What is left: limit − spent − reserved (never below zero); `None` without a limit.
    pub fn remaining(&self) -> Option<i64> {
        self.limit.map(|limit| {
            limit
                .saturating_sub(self.spent)
                .saturating_sub(self.reserved)
                .max(0)
        })
    }

    /// Whether a bounty of `amount` fits.
    pub fn fits(&self, amount: i64) -> bool {
        self.remaining().is_none_or(|left| amount <= left)
    }

    /// Ample, tight (under a fifth left) or exhausted.
    pub fn state(&self) -> BudgetState {
        match (self.limit, self.remaining()) {
            (Some(_), Some(0)) => BudgetState::Exhausted,
            (Some(limit), Some(left)) if left.saturating_mul(5) < limit => BudgetState::Tight,
            _ => BudgetState::Ample,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_from_zero_to_the_cap_pass_and_others_are_named() {
        assert_eq!(amount_problem("grossMinor", 0), None);
        assert_eq!(amount_problem("grossMinor", MAX_AMOUNT_MINOR), None);
        assert_eq!(
            amount_problem("grossMinor", -1).as_deref(),
            Some("grossMinor cannot be negative")
        );
        assert!(
            amount_problem("bountyMinor", MAX_AMOUNT_MINOR + 1)
                .is_some_and(|m| m.starts_with("bountyMinor is above the largest amount"))
        );
        // 9,223 events at the cap still fit in the niche's total, which fits in an i64.
        assert!(
            MAX_AMOUNT_MINOR
                .checked_mul(4_611)
                .is_some_and(|t| t <= MAX_NICHE_GROSS_MINOR)
        );
    }

    #[test]
    fn net_is_gross_less_costs_and_never_negative() {
        let costs = Costs {
            processing: 30,
            network: 5,
            infra: 10,
            refund: 0,
        };
        assert_eq!(net(1000, costs), 955);
        assert_eq!(net(40, costs), 0);
        let huge = Costs {
            processing: i64::MAX,
            network: i64::MAX,
            infra: 0,
            refund: 0,
        };
        assert_eq!(net(100, huge), 0);
    }

    #[test]
    fn allocation_always_sums_to_the_net() {
        let share_sets: [&[u32]; 5] = [
            &[2000],
            &[3000, 2000, 2000, 1000],
            &[2667, 2667, 2666],
            &[8000],
            &[],
        ];
        for net in [1, 3, 7, 99, 101, 333, 9999] {
            for shares in share_sets {
                let (parts, platform) = allocate(net, shares);
                assert_eq!(
                    parts.iter().sum::<i64>() + platform,
                    net,
                    "{net} by {shares:?}"
                );
                assert!(platform >= 0 && parts.iter().all(|p| *p >= 0));
                for (part, bps) in parts.iter().zip(shares) {
                    assert_eq!(*part, net * i64::from(*bps) / 10_000, "floored");
                }
            }
        }
    }

    #[test]
    fn a_big_net_does_not_overflow() {
        let (parts, platform) = allocate(i64::MAX, &[8000]);
        assert_eq!(parts[0] + platform, i64::MAX);
    }

    /// Found by the allocation property (tests/suite/properties.rs): shares over the whole
    /// gave the platform a negative rest, and at a big net their sum overflowed.
    #[test]
    fn shares_over_the_whole_never_give_away_more_than_the_net() {
        assert_eq!(allocate(1, &[10_000, 10_000]), (vec![1, 0], 0));
        assert_eq!(allocate(100, &[6000, 6000, 1]), (vec![60, 40, 0], 0));
        assert_eq!(
            allocate(i64::MAX, &[10_000, 10_000, u32::MAX]),
            (vec![i64::MAX, 0, 0], 0)
        );
    }

    #[test]
    fn months_and_their_resets() {
        let at = Utc
            .with_ymd_and_hms(2026, 12, 31, 23, 59, 59)
            .single()
            .expect("a time");
        assert_eq!(month_of(at), "2026-12");
        assert_eq!(
            resets_at(at),
            Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0)
                .single()
                .expect("a time")
        );
        let nov = Utc
            .with_ymd_and_hms(2026, 11, 29, 12, 0, 0)
            .single()
            .expect("a time");
        assert_eq!(
            resets_at(nov),
            Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0)
                .single()
                .expect("a time")
        );
    }

    #[test]
    fn a_budget_is_ample_tight_or_exhausted() {
        let budget = |spent, reserved| Budget {
            limit: Some(1000),
            spent,
            reserved,
        };
        assert_eq!(budget(0, 0).state(), BudgetState::Ample);
        assert_eq!(budget(500, 300).state(), BudgetState::Ample);
        assert_eq!(budget(700, 150).state(), BudgetState::Tight);
        assert_eq!(budget(900, 100).state(), BudgetState::Exhausted);
        assert_eq!(budget(900, 100).remaining(), Some(0));
        assert!(budget(900, 0).fits(100));
        assert!(!budget(900, 1).fits(100));
        let unlimited = Budget {
            limit: None,
            spent: 5,
            reserved: 5,
        };
        assert_eq!(unlimited.state(), BudgetState::Ample);
        assert!(unlimited.fits(i64::MAX));
        assert_eq!(unlimited.remaining(), None);
    }
}
