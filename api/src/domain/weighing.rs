//! How much an answer weighs (docs/contract.md#weighing-answers): a person's record in a niche
//! (the verified rate, its Wilson lower bound, the Brier score of the confidence they stated, a
//! calibration table), the trust rule built on it, the consensus of several answers, and the
//! agreement over a niche's multi-answer questions (Krippendorff's alpha, nominal).
//!
//! Arithmetic on plain values only; the services read the rows.

use std::collections::{BTreeMap, HashMap};

/// The normal quantile of a two-sided 95 % interval.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// The lowest and highest confidence an answer may state, in percent.
pub const CONFIDENCE_MIN: i32 = 50;
/// See [`CONFIDENCE_MIN`].
pub const CONFIDENCE_MAX: i32 = 100;

/// The default trust threshold: a Wilson lower bound of 0.85, in basis points.
pub const DEFAULT_TRUST_LOWER_BOUND_BPS: i32 = 8500;

/// The most and fewest answers a question may ask for.
pub const ANSWERS_WANTED_MAX: i32 = 7;
/// See [`ANSWERS_WANTED_MAX`]; 1 is the ordinary question.
pub const ANSWERS_WANTED_MIN: i32 = 1;

/// A stated confidence, checked: 50–100 percent.
pub fn confidence(value: Option<i32>) -> Result<Option<i32>, String> {
    match value {
        Some(v) if !(CONFIDENCE_MIN..=CONFIDENCE_MAX).contains(&v) => Err(format!(
            "confidence is a percentage from {CONFIDENCE_MIN} to {CONFIDENCE_MAX} (got {v})"
        )),
        other => Ok(other),
    }
}

/// The Wilson score interval's lower bound at 95 % for `successes` of `trials` (0 with no
/// trials): the verified rate a person's record shows at least, allowing for how few answers
/// it rests on.
pub fn wilson_lower_bound(successes: u64, trials: u64) -> f64 {
    if trials == 0 {
        return 0.0;
    }
    let (k, n) = (successes.min(trials) as f64, trials as f64);
    let p = k / n;
    let z2 = Z_95 * Z_95;
    let centre = p + z2 / (2.0 * n);
    let spread = Z_95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - spread) / (1.0 + z2 / n)).max(0.0)
}

/// One judged answer: the confidence stated (percent, if any) and whether it was verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judged {
    /// Stated confidence in percent.
    pub confidence: Option<i32>,
    /// Verified (true) or rejected or reversed (false).
    pub verified: bool,
}

/// One row of a calibration table: answers stated in `[from, to]` percent.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationBin {
    /// The lowest confidence in the bin.
    pub from: i32,
    /// The highest confidence in the bin.
    pub to: i32,
    /// Answers in the bin.
    pub answers: u64,
    /// The mean confidence stated, 0–1.
    pub stated: f64,
    /// The share verified, 0–1.
    pub observed: f64,
}

/// A person's record in a niche, over answers with a known verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Answers with a verdict.
    pub answers: u64,
    /// Of which verified.
    pub verified: u64,
    /// `verified / answers` (0 with none).
    pub verified_rate: f64,
    /// The Wilson 95 % lower bound of the verified rate.
    pub lower_bound: f64,
    /// The mean squared difference of stated confidence and outcome, over answers that stated
    /// one (`None` when none did). 0 is perfect; always saying 50 % scores 0.25.
    pub brier: Option<f64>,
    /// Answers that stated a confidence.
    pub with_confidence: u64,
    /// Stated against observed, in 10-point bins (50–59 … 90–100), empty bins left out.
    pub calibration: Vec<CalibrationBin>,
}

impl Record {
    /// The record of these judged answers.
    pub fn of(judged: &[Judged]) -> Self {
        let answers = judged.len() as u64;
        let verified = judged.iter().filter(|j| j.verified).count() as u64;
        let verified_rate = if answers == 0 {
            0.0
        } else {
            verified as f64 / answers as f64
        };
        let stated: Vec<(f64, f64)> = judged
            .iter()
            .filter_map(|j| {
                j.confidence
                    .map(|c| (f64::from(c) / 100.0, if j.verified { 1.0 } else { 0.0 }))
            })
            .collect();
        let brier = (!stated.is_empty()).then(|| {
            stated.iter().map(|(p, o)| (p - o) * (p - o)).sum::<f64>() / stated.len() as f64
        });
        let mut bins: BTreeMap<i32, (u64, f64, f64)> = BTreeMap::new();
        for j in judged {
            if let Some(c) = j.confidence {
                let bin = bins.entry(bin_of(c)).or_default();
                bin.0 += 1;
                bin.1 += f64::from(c) / 100.0;
                bin.2 += if j.verified { 1.0 } else { 0.0 };
            }
        }
        let calibration = bins
            .into_iter()
            .map(|(from, (n, stated, observed))| CalibrationBin {
                from,
                to: if from == 90 { 100 } else { from + 9 },
                answers: n,
                stated: stated / n as f64,
                observed: observed / n as f64,
            })
            .collect();
        Record {
            answers,
            verified,
            verified_rate,
            lower_bound: wilson_lower_bound(verified, answers),
            brier,
            with_confidence: stated.len() as u64,
            calibration,
        }
    }

    /// The record from its sums alone: `answers` judged, `verified` of them, and over the
    /// `with_confidence` that stated a confidence the sum of squared differences of stated
    /// confidence and outcome (`squared_errors`). What an answer's path needs (the trust rule and
    /// the record an agent receives), read as one row; the calibration bins, read only on the
    /// standing page, are left empty.
    pub fn of_sums(answers: u64, verified: u64, with_confidence: u64, squared_errors: f64) -> Self {
        let verified_rate = if answers == 0 {
            0.0
        } else {
            verified as f64 / answers as f64
        };
        let brier = (with_confidence > 0).then(|| squared_errors / with_confidence as f64);
        Record {
            answers,
            verified,
            verified_rate,
            lower_bound: wilson_lower_bound(verified, answers),
            brier,
            with_confidence,
            calibration: Vec::new(),
        }
    }

    /// Whether the record earns trust (answers verify on arrival) at `threshold_bps`.
    pub fn trusted(&self, threshold_bps: i32) -> bool {
        trusted(self.lower_bound, threshold_bps)
    }
}

/// The first confidence of the 10-point bin `confidence` falls in (100 joins 90–99).
fn bin_of(confidence: i32) -> i32 {
    (confidence.clamp(CONFIDENCE_MIN, CONFIDENCE_MAX) / 10 * 10).min(90)
}

/// Trust holds when the lower bound reaches the threshold (basis points).
pub fn trusted(lower_bound: f64, threshold_bps: i32) -> bool {
    // Compared in basis points, rounded down, so 0.8668 against 8500 is exactly what it reads.
    let bound_bps = (lower_bound * 10_000.0).floor() as i64;
    bound_bps >= i64::from(threshold_bps)
}

/// One answer to a multi-answer question, for the consensus: the option chosen and the weight
/// its author's record gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Vote {
    /// The option chosen.
    pub option_id: String,
    /// The author's Wilson lower bound in the niche when the consensus is taken.
    pub weight: f64,
}

/// One answer's part of a several-answer question's bounty: equal parts, the last place taking
/// what division leaves (100 among 3: 33, 33, 34). `place` counts from 1.
pub fn bounty_part(bounty: i64, wanted: i32, place: i32) -> i64 {
    let wanted = i64::from(wanted.max(1));
    let base = bounty / wanted;
    if i64::from(place) >= wanted {
        bounty - base * (wanted - 1)
    } else {
        base
    }
}

/// What several answers came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Consensus {
    /// The plurality option (ties go to the heavier option, then to the one chosen first).
    pub option_id: String,
    /// Its share of the answers, 0–1.
    pub agreement: f64,
    /// Its share of the answers' weight, 0–1 (the raw share when no answer weighs anything).
    pub weighted_agreement: f64,
    /// Whether the share reaches the question's `agreement`.
    pub reached: bool,
}

/// The plurality of `votes` against `agreement_bps`; `None` with no votes.
pub fn consensus(votes: &[Vote], agreement_bps: i32) -> Option<Consensus> {
    let mut tally: Vec<(&str, u64, f64)> = Vec::new();
    for vote in votes {
        match tally.iter_mut().find(|(o, _, _)| *o == vote.option_id) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 += vote.weight.max(0.0);
            }
            None => tally.push((&vote.option_id, 1, vote.weight.max(0.0))),
        }
    }
    let total_weight: f64 = tally.iter().map(|t| t.2).sum();
    // Stable: among equals the first chosen (earliest in `tally`) stays first.
    let best = tally
        .iter()
        .enumerate()
        .max_by(|(ia, a), (ib, b)| a.1.cmp(&b.1).then(a.2.total_cmp(&b.2)).then(ib.cmp(ia)))?;
    let (option, count, weight) = *best.1;
    let agreement = count as f64 / votes.len() as f64;
    let weighted_agreement = if total_weight > 0.0 {
        weight / total_weight
    } else {
        agreement
    };
    let reached = (agreement * 10_000.0).round() as i64 >= i64::from(agreement_bps);
    Some(Consensus {
        option_id: option.to_owned(),
        agreement,
        weighted_agreement,
        reached,
    })
}

/// Krippendorff's alpha for nominal values: each unit is the values its observers gave (any
/// number, missing ones left out). Units with fewer than two values are not pairable and are
/// left out. `None` when fewer than two values are pairable or all of them are the same value
/// (no disagreement is expected, so alpha is undefined).
pub fn krippendorff_alpha_nominal<T: Eq + std::hash::Hash>(units: &[Vec<T>]) -> Option<f64> {
    // The coincidence matrix: within a unit of m values each ordered pair of different
    // observers' values adds 1/(m-1).
    let mut coincidences: HashMap<(&T, &T), f64> = HashMap::new();
    for unit in units.iter().filter(|u| u.len() >= 2) {
        let each = 1.0 / (unit.len() - 1) as f64;
        for (i, a) in unit.iter().enumerate() {
            for (j, b) in unit.iter().enumerate() {
                if i != j {
                    *coincidences.entry((a, b)).or_default() += each;
                }
            }
        }
    }
    let mut marginals: HashMap<&T, f64> = HashMap::new();
    for ((c, _), v) in &coincidences {
        *marginals.entry(*c).or_default() += v;
    }
    let n: f64 = marginals.values().sum();
    if n < 2.0 {
        return None;
    }
    let observed: f64 = coincidences
        .iter()
        .filter(|((c, k), _)| c != k)
        .map(|(_, v)| v)
        .sum();
    let expected: f64 = n * n - marginals.values().map(|m| m * m).sum::<f64>();
    if expected <= 0.0 {
        return None;
    }
    Some(1.0 - (n - 1.0) * observed / expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn a_record_from_its_sums_is_the_record_of_its_answers_but_for_the_bins() {
        let judged = [
            Judged {
                confidence: Some(95),
                verified: true,
            },
            Judged {
                confidence: Some(80),
                verified: false,
            },
            Judged {
                confidence: None,
                verified: true,
            },
            Judged {
                confidence: Some(60),
                verified: true,
            },
        ];
        let whole = Record::of(&judged);
        let squared: f64 = judged
            .iter()
            .filter_map(|j| {
                let outcome = if j.verified { 1.0 } else { 0.0 };
                j.confidence
                    .map(|c| (f64::from(c) / 100.0 - outcome).powi(2))
            })
            .sum();
        let summed = Record::of_sums(4, 3, 3, squared);
        assert_eq!(
            Record {
                calibration: Vec::new(),
                ..whole
            },
            summed
        );
        let none = Record::of_sums(0, 0, 0, 0.0);
        assert_eq!(none, Record::of(&[]));
    }

    #[test]
    fn the_wilson_bound_matches_the_formula_worked_by_hand() {
        // 25 of 25: p = 1, so the bound is 1 / (1 + z²/n) = 1 / (1 + 3.8415/25) = 0.86681.
        assert!(close(wilson_lower_bound(25, 25), 0.866_81, 1e-4));
        // 24 of 25: p = 0.96; centre 0.96 + 3.8415/50 = 1.03683; spread
        // 1.96 * sqrt(0.96*0.04/25 + 3.8415/2500) = 1.96 * sqrt(0.001536 + 0.0015366) = 0.10864;
        // divided by 1.15366: (1.03683 - 0.10864) / 1.15366 = 0.80456.
        assert!(close(wilson_lower_bound(24, 25), 0.804_56, 1e-4));
        // 40 of 40: 1 / (1 + 3.8415/40) = 0.91238.
        assert!(close(wilson_lower_bound(40, 40), 0.912_38, 1e-4));
        assert!(close(wilson_lower_bound(0, 10), 0.0, 1e-12));
        assert!(close(wilson_lower_bound(0, 0), 0.0, 1e-12));
    }

    #[test]
    fn the_trust_rule_counts_rejections() {
        let clean = |n| {
            Record::of(&vec![
                Judged {
                    confidence: None,
                    verified: true
                };
                n
            ])
        };
        assert!(clean(25).trusted(DEFAULT_TRUST_LOWER_BOUND_BPS));
        assert!(clean(40).trusted(DEFAULT_TRUST_LOWER_BOUND_BPS));
        // 21 clean answers: 1 / (1 + 3.8415/21) = 0.8454, below 0.85; 22: 0.8513.
        assert!(!clean(21).trusted(DEFAULT_TRUST_LOWER_BOUND_BPS));
        assert!(clean(22).trusted(DEFAULT_TRUST_LOWER_BOUND_BPS));
        let mut one_rejected = vec![
            Judged {
                confidence: None,
                verified: true
            };
            24
        ];
        one_rejected.push(Judged {
            confidence: None,
            verified: false,
        });
        assert!(!Record::of(&one_rejected).trusted(DEFAULT_TRUST_LOWER_BOUND_BPS));
        // A stricter niche: 40 clean answers (0.9124) are not enough for 0.95.
        assert!(!clean(40).trusted(9500));
        assert!(clean(0).lower_bound == 0.0 && !clean(0).trusted(1));
    }

    #[test]
    fn brier_and_calibration_follow_the_stated_confidence() {
        let judged = [
            Judged {
                confidence: Some(95),
                verified: true,
            },
            Judged {
                confidence: Some(80),
                verified: false,
            },
            Judged {
                confidence: Some(60),
                verified: true,
            },
            Judged {
                confidence: Some(100),
                verified: true,
            },
            Judged {
                confidence: None,
                verified: false,
            },
        ];
        let record = Record::of(&judged);
        // ((0.95-1)² + (0.8-0)² + (0.6-1)² + (1-1)²) / 4 = (0.0025 + 0.64 + 0.16 + 0) / 4 = 0.200625.
        assert!(close(record.brier.unwrap(), 0.200_625, 1e-12));
        assert_eq!(record.with_confidence, 4);
        assert_eq!((record.answers, record.verified), (5, 3));
        let bins: Vec<(i32, i32, u64)> = record
            .calibration
            .iter()
            .map(|b| (b.from, b.to, b.answers))
            .collect();
        assert_eq!(bins, vec![(60, 69, 1), (80, 89, 1), (90, 100, 2)]);
        let top = &record.calibration[2];
        assert!(close(top.stated, 0.975, 1e-12) && close(top.observed, 1.0, 1e-12));
        assert_eq!(Record::of(&[]).brier, None);
    }

    #[test]
    fn a_confidence_outside_fifty_to_a_hundred_is_refused() {
        assert_eq!(confidence(None), Ok(None));
        assert_eq!(confidence(Some(50)), Ok(Some(50)));
        assert_eq!(confidence(Some(100)), Ok(Some(100)));
        assert!(confidence(Some(49)).unwrap_err().contains("50 to 100"));
        assert!(confidence(Some(101)).is_err());
        assert!(confidence(Some(-5)).is_err());
    }

    fn vote(option: &str, weight: f64) -> Vote {
        Vote {
            option_id: option.into(),
            weight,
        }
    }

    #[test]
    fn two_of_three_reach_a_sixty_percent_agreement_and_one_each_does_not() {
        let split = consensus(&[vote("a", 0.9), vote("b", 0.5), vote("a", 0.3)], 6000).unwrap();
        assert_eq!(split.option_id, "a");
        assert!(close(split.agreement, 2.0 / 3.0, 1e-12));
        // (0.9 + 0.3) / 1.7
        assert!(close(split.weighted_agreement, 1.2 / 1.7, 1e-12));
        assert!(split.reached);
        let each = consensus(&[vote("a", 0.9), vote("b", 0.5), vote("c", 0.3)], 6000).unwrap();
        assert!(close(each.agreement, 1.0 / 3.0, 1e-12));
        assert!(!each.reached);
        // A tie goes to the heavier option; with no weight at all the weighted share is the raw.
        let tie = consensus(&[vote("a", 0.2), vote("b", 0.7)], 5000).unwrap();
        assert_eq!((tie.option_id.as_str(), tie.reached), ("b", true));
        let newcomers = consensus(&[vote("a", 0.0), vote("a", 0.0), vote("b", 0.0)], 5000).unwrap();
        assert!(close(newcomers.weighted_agreement, 2.0 / 3.0, 1e-12));
        assert_eq!(consensus(&[], 5000), None);
    }

    #[test]
    fn krippendorffs_alpha_matches_the_published_nominal_example() {
        // Krippendorff, K. (2011). "Computing Krippendorff's Alpha-Reliability", Annenberg
        // School for Communication, University of Pennsylvania, section C ("Nominal data, any
        // number of observers, missing data"): four observers, twelve units, alpha = 0.743.
        let observers: [[Option<u8>; 12]; 4] = [
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(1),
                Some(4),
                Some(1),
                Some(2),
                None,
                None,
                None,
            ],
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(2),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                None,
                Some(3),
            ],
            [
                None,
                Some(3),
                Some(3),
                Some(3),
                Some(2),
                Some(3),
                Some(4),
                Some(2),
                Some(2),
                Some(5),
                Some(1),
                None,
            ],
            [
                Some(1),
                Some(2),
                Some(3),
                Some(3),
                Some(2),
                Some(4),
                Some(4),
                Some(1),
                Some(2),
                Some(5),
                Some(1),
                None,
            ],
        ];
        let units: Vec<Vec<u8>> = (0..12)
            .map(|u| observers.iter().filter_map(|o| o[u]).collect())
            .collect();
        let alpha = krippendorff_alpha_nominal(&units).unwrap();
        assert!(close(alpha, 0.743, 0.0005), "alpha {alpha}");
        // Perfect agreement over varied values is 1; one value everywhere is undefined.
        assert_eq!(
            krippendorff_alpha_nominal(&[vec![1, 1], vec![2, 2]]),
            Some(1.0)
        );
        assert_eq!(krippendorff_alpha_nominal(&[vec![1, 1], vec![1, 1]]), None);
        assert_eq!(krippendorff_alpha_nominal::<u8>(&[vec![1]]), None);
    }
}
