//! Scoring rules (docs/contract.md#scoring-and-review): diminishing returns, the score as a sum
//! of verified points, the tier ladder, and how members' revenue shares fit into 80%. When an
//! answer verifies on arrival is `domain::weighing`'s trust rule.
//!
//! Everything here is arithmetic on plain values; the service reads the rows and stores results.

use std::cmp::Reverse;

/// The most any member's share, and the sum of all members' shares, may be: 80% in basis points.
pub const MAX_SHARE_BPS: u32 = 8000;

/// A contribution's review state as the rules see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContributionState {
    /// Waiting for an admin; its points do not count yet.
    Pending,
    /// Accepted; its points count towards the score.
    Verified,
    /// Refused while pending; its points never count.
    Rejected,
    /// Verified once, then taken back; the row keeps its points but they leave the sum.
    Reversed,
}

/// A rung of the tier ladder (read from the contribution_tiers table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tier {
    /// The row id in contribution_tiers.
    pub id: i64,
    /// The name shown to people, e.g. "Specialist".
    pub name: String,
    /// The lowest score that reaches this tier.
    pub min_score: i64,
    /// The revenue share this tier earns, in basis points.
    pub share_bps: u32,
}

/// Diminishing returns: full points below `limit` recent verified events, then half, quarter, none.
///
/// `verified_in_window` is the person's verified events of this type in the last 30 days and
/// `limit` is the type's d: below d full points, in [d, 2d) half, in [2d, 4d) a quarter, from 4d
/// none. Fractions round half up (3 halved = 2, quartered = 1). `limit == 0` turns it off.
pub fn diminished_points(base: i64, verified_in_window: u64, limit: u64) -> i64 {
    if limit == 0 || verified_in_window < limit {
        return base;
    }
    // Saturating so a huge limit means "never reached" rather than wrapping to a small bound.
    if verified_in_window < limit.saturating_mul(2) {
        divide_rounding_half_up(base, 2)
    } else if verified_in_window < limit.saturating_mul(4) {
        divide_rounding_half_up(base, 4)
    } else {
        0
    }
}

/// `value / divisor` rounded half towards +infinity, without the overflow of `(value + d/2) / d`.
fn divide_rounding_half_up(value: i64, divisor: i64) -> i64 {
    let quotient = value.div_euclid(divisor);
    let remainder = value.rem_euclid(divisor);
    // The euclidean remainder is never negative, so "at least half the divisor" means round up.
    quotient + i64::from(remainder * 2 >= divisor)
}

/// Score = sum of the points of Verified events only, never below 0.
///
/// Pending, Rejected and Reversed events keep their points on the row but do not count; the
/// score is always recomputed from all events rather than incremented
/// (docs/contract.md#scoring-and-review).
pub fn score<I: IntoIterator<Item = (ContributionState, i64)>>(events: I) -> i64 {
    events
        .into_iter()
        .filter(|(state, _)| *state == ContributionState::Verified)
        .fold(0_i64, |sum, (_, points)| sum.saturating_add(points))
        .max(0)
}

/// The highest tier whose min_score <= score (ladder in any order); None if no tier is reached.
pub fn tier_for(score: i64, ladder: &[Tier]) -> Option<&Tier> {
    ladder
        .iter()
        .filter(|tier| tier.min_score <= score)
        .max_by_key(|tier| tier.min_score)
}

/// The lowest tier whose min_score > score, if any (None = at the top of the ladder).
pub fn next_tier(score: i64, ladder: &[Tier]) -> Option<&Tier> {
    ladder
        .iter()
        .filter(|tier| tier.min_score > score)
        .min_by_key(|tier| tier.min_score)
}

/// A member's wanted share: min(tier share, their cap, MAX_SHARE_BPS).
pub fn member_share_bps(tier_share_bps: u32, cap_bps: u32) -> u32 {
    tier_share_bps.min(cap_bps).min(MAX_SHARE_BPS)
}

/// Fit members' wanted shares into MAX_SHARE_BPS, in proportion by largest remainder.
///
/// Wants summing to at most 8000 come back unchanged. Otherwise each member gets
/// floor(8000 * want / total) and the leftover basis points go one each to the largest
/// remainders, ties to the earlier member, so the result sums to exactly 8000. Integer
/// arithmetic throughout so every node computes the same split.
pub fn apportion(wants: &[u32]) -> Vec<u32> {
    let total: u128 = wants.iter().map(|&want| u128::from(want)).sum();
    if total <= u128::from(MAX_SHARE_BPS) {
        return wants.to_vec();
    }
    let pool = u128::from(MAX_SHARE_BPS);
    let mut shares = Vec::with_capacity(wants.len());
    let mut remainders = Vec::with_capacity(wants.len());
    for (index, &want) in wants.iter().enumerate() {
        let scaled = pool * u128::from(want);
        // want <= total, so scaled / total <= pool = 8000: the cast cannot truncate.
        shares.push((scaled / total) as u32);
        remainders.push((scaled % total, index));
    }
    let given: u32 = shares.iter().sum();
    let leftover = MAX_SHARE_BPS.saturating_sub(given) as usize;
    // Stable sort on the remainder alone keeps input order among equal remainders. The leftover
    // is below the count of non-zero remainders, so a zero want never receives a point.
    remainders.sort_by_key(|&(remainder, _)| Reverse(remainder));
    for &(_, index) in remainders.iter().take(leftover) {
        if let Some(share) = shares.get_mut(index) {
            *share += 1;
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ladder the migration seeds (docs/contract.md#scoring-and-review), lowest rung first.
    fn seeded_ladder() -> Vec<Tier> {
        [
            ("Contributor", 0, 2000),
            ("Specialist", 100, 3000),
            ("Expert", 250, 4000),
            ("Lead Expert", 500, 5000),
            ("Niche Operator", 900, 6000),
            ("Senior Operator", 1500, 7000),
            ("Top Knowledge Influencer", 2500, 8000),
        ]
        .into_iter()
        .zip(1..)
        .map(|((name, min_score, share_bps), id)| Tier {
            id,
            name: name.to_owned(),
            min_score,
            share_bps,
        })
        .collect()
    }

    /// The seeded ladder in a scrambled order, as a table read without ORDER BY might return it.
    fn shuffled_ladder() -> Vec<Tier> {
        let ladder = seeded_ladder();
        [4, 0, 6, 2, 5, 1, 3]
            .into_iter()
            .map(|i| ladder[i].clone())
            .collect()
    }

    fn share_at(score: i64, ladder: &[Tier]) -> Option<u32> {
        tier_for(score, ladder).map(|tier| tier.share_bps)
    }

    // --- trust threshold ---

    // --- diminishing returns ---

    #[test]
    fn below_the_limit_an_answer_earns_full_points() {
        assert_eq!(diminished_points(3, 0, 30), 3);
        assert_eq!(diminished_points(3, 29, 30), 3);
    }

    #[test]
    fn from_the_limit_an_answer_earns_half_rounded_up() {
        assert_eq!(diminished_points(3, 30, 30), 2);
        assert_eq!(diminished_points(3, 59, 30), 2);
    }

    #[test]
    fn from_twice_the_limit_an_answer_earns_a_quarter_rounded_up() {
        assert_eq!(diminished_points(3, 60, 30), 1);
        assert_eq!(diminished_points(3, 119, 30), 1);
    }

    #[test]
    fn from_four_times_the_limit_an_answer_earns_nothing() {
        assert_eq!(diminished_points(3, 120, 30), 0);
        assert_eq!(diminished_points(3, 500, 30), 0);
    }

    #[test]
    fn even_points_halve_and_quarter_exactly() {
        assert_eq!(diminished_points(4, 30, 30), 2);
        assert_eq!(diminished_points(4, 60, 30), 1);
    }

    #[test]
    fn a_quarter_that_is_exactly_half_a_point_rounds_up() {
        assert_eq!(diminished_points(2, 60, 30), 1);
        assert_eq!(diminished_points(1, 60, 30), 0);
    }

    #[test]
    fn zero_points_stay_zero_at_every_step() {
        for count in [0, 30, 60, 120] {
            assert_eq!(diminished_points(0, count, 30), 0);
        }
    }

    #[test]
    fn a_zero_limit_never_diminishes() {
        assert_eq!(diminished_points(3, 0, 0), 3);
        assert_eq!(diminished_points(3, 10_000, 0), 3);
    }

    #[test]
    fn a_huge_limit_does_not_wrap_into_a_small_bound() {
        assert_eq!(diminished_points(3, u64::MAX - 1, u64::MAX), 3);
        assert_eq!(diminished_points(3, u64::MAX - 1, u64::MAX / 2 + 1), 2);
    }

    // --- score ---

    #[test]
    fn a_score_counts_verified_points_only() {
        let events = [
            (ContributionState::Verified, 20),
            (ContributionState::Verified, 3),
            (ContributionState::Pending, 100),
            (ContributionState::Rejected, 50),
        ];
        assert_eq!(score(events), 23);
    }

    #[test]
    fn a_reversed_contribution_leaves_the_score() {
        let before = [
            (ContributionState::Verified, 20),
            (ContributionState::Verified, 3),
        ];
        let after = [
            (ContributionState::Reversed, 20),
            (ContributionState::Verified, 3),
        ];
        assert_eq!(score(before), 23);
        assert_eq!(score(after), 3);
    }

    #[test]
    fn a_score_with_nothing_verified_is_zero() {
        assert_eq!(score([]), 0);
        assert_eq!(
            score([
                (ContributionState::Verified, 0),
                (ContributionState::Pending, 40)
            ]),
            0
        );
    }

    #[test]
    fn a_score_never_goes_below_zero() {
        let events = [
            (ContributionState::Verified, 5),
            (ContributionState::Verified, -20),
        ];
        assert_eq!(score(events), 0);
    }

    // --- tiers ---

    #[test]
    fn each_tier_starts_exactly_at_its_min_score() {
        let ladder = seeded_ladder();
        let boundaries = [
            (0, 2000),
            (99, 2000),
            (100, 3000),
            (249, 3000),
            (250, 4000),
            (499, 4000),
            (500, 5000),
            (899, 5000),
            (900, 6000),
            (1499, 6000),
            (1500, 7000),
            (2499, 7000),
            (2500, 8000),
            (100_000, 8000),
        ];
        for (points, share) in boundaries {
            assert_eq!(share_at(points, &ladder), Some(share), "score {points}");
        }
    }

    #[test]
    fn a_shuffled_ladder_gives_the_same_tiers() {
        let ordered = seeded_ladder();
        let shuffled = shuffled_ladder();
        for points in [
            0, 99, 100, 249, 250, 499, 500, 899, 900, 1499, 1500, 2499, 2500,
        ] {
            assert_eq!(
                tier_for(points, &shuffled),
                tier_for(points, &ordered),
                "score {points}"
            );
            assert_eq!(
                next_tier(points, &shuffled),
                next_tier(points, &ordered),
                "score {points}"
            );
        }
    }

    #[test]
    fn an_empty_ladder_has_no_tier() {
        assert_eq!(tier_for(500, &[]), None);
        assert_eq!(next_tier(500, &[]), None);
    }

    #[test]
    fn a_score_below_the_lowest_rung_has_no_tier() {
        let ladder: Vec<Tier> = seeded_ladder()
            .into_iter()
            .filter(|tier| tier.min_score >= 100)
            .collect();
        assert_eq!(tier_for(99, &ladder), None);
        assert_eq!(
            tier_for(100, &ladder).map(|tier| tier.name.as_str()),
            Some("Specialist")
        );
    }

    #[test]
    fn the_next_tier_from_99_is_specialist() {
        let ladder = seeded_ladder();
        let next = next_tier(99, &ladder);
        assert_eq!(next.map(|tier| tier.name.as_str()), Some("Specialist"));
        assert_eq!(next.map(|tier| tier.min_score - 99), Some(1));
    }

    #[test]
    fn the_next_tier_from_a_boundary_is_the_rung_above() {
        let ladder = seeded_ladder();
        assert_eq!(
            next_tier(100, &ladder).map(|tier| tier.name.as_str()),
            Some("Expert")
        );
    }

    #[test]
    fn at_the_top_of_the_ladder_there_is_no_next_tier() {
        let ladder = seeded_ladder();
        assert_eq!(next_tier(2500, &ladder), None);
        assert_eq!(next_tier(100_000, &ladder), None);
    }

    // --- member shares ---

    #[test]
    fn a_cap_below_the_tier_share_wins() {
        assert_eq!(member_share_bps(6000, 2500), 2500);
    }

    #[test]
    fn a_tier_share_below_the_cap_wins() {
        assert_eq!(member_share_bps(3000, 7000), 3000);
    }

    #[test]
    fn a_member_share_never_exceeds_80_percent() {
        assert_eq!(member_share_bps(9000, 10_000), MAX_SHARE_BPS);
        assert_eq!(member_share_bps(u32::MAX, u32::MAX), MAX_SHARE_BPS);
    }

    // --- apportion ---

    #[test]
    fn wants_within_80_percent_are_unchanged() {
        assert_eq!(apportion(&[2000, 3000]), vec![2000, 3000]);
        assert_eq!(apportion(&[5000, 3000]), vec![5000, 3000]);
    }

    #[test]
    fn no_members_get_no_shares() {
        assert_eq!(apportion(&[]), Vec::<u32>::new());
    }

    #[test]
    fn oversubscribed_wants_are_split_in_proportion() {
        // Members at scores 2500, 2500 and 900.
        let shares = apportion(&[8000, 8000, 6000]);
        assert_eq!(shares, vec![2909, 2909, 2182]);
        assert_eq!(shares.iter().sum::<u32>(), MAX_SHARE_BPS);
    }

    #[test]
    fn three_equal_wants_split_to_exactly_80_percent() {
        let mut shares = apportion(&[8000, 8000, 8000]);
        assert_eq!(shares.iter().sum::<u32>(), MAX_SHARE_BPS);
        shares.sort_unstable();
        assert_eq!(shares, vec![2666, 2667, 2667]);
    }

    #[test]
    fn tied_remainders_go_to_the_earlier_members() {
        assert_eq!(apportion(&[8000, 8000, 8000]), vec![2667, 2667, 2666]);
    }

    #[test]
    fn twenty_top_members_get_400_each() {
        let shares = apportion(&[8000; 20]);
        assert_eq!(shares, vec![400; 20]);
        assert_eq!(shares.iter().sum::<u32>(), MAX_SHARE_BPS);
    }

    #[test]
    fn a_zero_want_stays_zero_when_oversubscribed() {
        let shares = apportion(&[0, 8000, 8000]);
        assert_eq!(shares, vec![0, 4000, 4000]);
    }

    #[test]
    fn uneven_oversubscribed_wants_still_sum_to_exactly_80_percent() {
        let wants = [7000, 3000, 2000, 1, 6999, 5000, 333];
        let shares = apportion(&wants);
        assert_eq!(shares.iter().sum::<u32>(), MAX_SHARE_BPS);
        // Nobody is handed more than they asked for.
        assert!(shares.iter().zip(wants).all(|(&got, want)| got <= want));
    }
}
