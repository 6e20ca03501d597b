//! People as GraphQL shows them: users, members, memberships with their tier and record.

use async_graphql::{Enum, ID, SimpleObject};
use entity::niche_members::{MemberRole as StoredRole, MemberStatus as StoredMemberStatus};
use entity::users;

use super::Niche;
use crate::domain::scoring;
use crate::graphql::enums::MemberStatus;
use crate::service::money::standing::MembershipStanding;

/// A member's role in a niche.
#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
#[graphql(remote = "StoredRole")]
pub enum MemberRole {
    /// Answers questions.
    Operator,
    /// Answers questions in a speciality.
    Specialist,
    /// Reads, never answers.
    Observer,
}
/// A person.
#[derive(SimpleObject, Clone)]
pub struct User {
    /// Their id.
    pub id: ID,
    /// Their handle.
    pub handle: String,
    /// Whether they administer askloop.
    pub is_admin: bool,
}

impl From<&users::Model> for User {
    fn from(user: &users::Model) -> Self {
        Self {
            id: ID(user.id.to_string()),
            handle: user.handle.clone(),
            is_admin: user.role == users::UserRole::Admin,
        }
    }
}
/// A rung of the tier ladder.
#[derive(SimpleObject, Clone)]
pub struct Tier {
    /// Its name.
    pub name: String,
    /// The lowest score in it.
    pub min_score: i64,
    /// Its share of a niche's revenue, basis points.
    pub share_bps: i32,
}

impl From<scoring::Tier> for Tier {
    fn from(tier: scoring::Tier) -> Self {
        Self {
            name: tier.name,
            min_score: tier.min_score,
            share_bps: i32::try_from(tier.share_bps).unwrap_or(0),
        }
    }
}

/// A membership with where its holder stands.
#[derive(SimpleObject, Clone)]
pub struct Membership {
    /// The niche.
    pub niche: Niche,
    /// What they do in the niche.
    pub role: MemberRole,
    /// Where their membership stands.
    pub status: MemberStatus,
    /// Sum of verified points.
    pub score: i64,
    /// Verified contributions.
    pub verified_count: i64,
    /// Contributions awaiting review.
    pub pending_count: i64,
    /// The tier the score is in.
    pub tier: Tier,
    /// The next tier up; none at the top of the ladder.
    pub next_tier: Option<Tier>,
    /// Points still needed for the next tier.
    pub points_to_next_tier: Option<i64>,
    /// Share of the niche's revenue, basis points (after the 80% split).
    pub share_bps: i32,
    /// The most this member's share may be, basis points.
    pub share_cap_bps: i32,
    /// How many times agents relied on the knowledge entries they wrote in the niche.
    pub reuse_count: i64,
    /// How often their answers here are verified and how well their stated confidence matches.
    pub calibration: Calibration,
}

/// A person's record in a niche (docs/contract.md#weighing-answers), over answers with a
/// verdict (verified counts for, rejected or reversed against).
#[derive(SimpleObject, Clone, Debug)]
pub struct Calibration {
    /// Answers with a verdict.
    pub answers: i64,
    /// Of which verified.
    pub verified: i64,
    /// Verified among them, 0–1.
    pub verified_rate: f64,
    /// The Wilson 95 % lower bound of that rate.
    pub lower_bound: f64,
    /// Whether the lower bound reaches the niche's threshold: answers verify on arrival.
    pub trusted: bool,
    /// The niche's threshold.
    pub trust_lower_bound: f64,
    /// The Brier score of the confidence stated (0 is perfect, 0.25 is always saying 50 %);
    /// none until an answer with a stated confidence has a verdict.
    pub brier: Option<f64>,
    /// Answers with a verdict that stated a confidence.
    pub with_confidence: i64,
    /// Stated against observed, in 10-point bins; empty bins left out.
    pub bins: Vec<CalibrationBin>,
}

/// One bin of a calibration table.
#[derive(SimpleObject, Clone, Debug)]
pub struct CalibrationBin {
    /// The lowest confidence in the bin, percent.
    pub from: i32,
    /// The highest, percent.
    pub to: i32,
    /// Answers in it.
    pub answers: i64,
    /// The mean confidence stated, 0–1.
    pub stated: f64,
    /// The share verified, 0–1.
    pub observed: f64,
}

impl Calibration {
    /// The view of `record` against a threshold in basis points.
    pub fn of(record: &crate::domain::weighing::Record, threshold_bps: i32) -> Self {
        let n = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
        Calibration {
            answers: n(record.answers),
            verified: n(record.verified),
            verified_rate: record.verified_rate,
            lower_bound: record.lower_bound,
            trusted: record.trusted(threshold_bps),
            trust_lower_bound: f64::from(threshold_bps) / 10_000.0,
            brier: record.brier,
            with_confidence: n(record.with_confidence),
            bins: record
                .calibration
                .iter()
                .map(|b| CalibrationBin {
                    from: b.from,
                    to: b.to,
                    answers: n(b.answers),
                    stated: b.stated,
                    observed: b.observed,
                })
                .collect(),
        }
    }
}

impl From<MembershipStanding> for Membership {
    fn from(s: MembershipStanding) -> Self {
        Self {
            role: s.member.role.into(),
            status: s.member.status.into(),
            score: s.score,
            verified_count: s.verified_count,
            pending_count: s.pending_count,
            points_to_next_tier: s.next_tier.as_ref().map(|t| t.min_score - s.score),
            next_tier: s.next_tier.map(Tier::from),
            tier: s.tier.into(),
            share_bps: i32::try_from(s.share_bps).unwrap_or(0),
            share_cap_bps: s.member.share_cap_bps,
            reuse_count: i64::try_from(s.reuse_count).unwrap_or(i64::MAX),
            calibration: Calibration::of(&s.record, s.niche.trust_lower_bound_bps),
            niche: s.niche.into(),
        }
    }
}

/// A member of a niche, as admins see them.
#[derive(SimpleObject, Clone)]
pub struct Member {
    /// The person's handle.
    pub handle: String,
    /// The niche's slug.
    pub niche_slug: String,
    /// Their role.
    pub role: MemberRole,
    /// Their status.
    pub status: MemberStatus,
    /// Their share cap, basis points.
    pub share_cap_bps: i32,
}
/// The roles and statuses stored for members.
pub fn member_view(
    handle: &str,
    niche_slug: &str,
    role: StoredRole,
    status: StoredMemberStatus,
    cap: i32,
) -> Member {
    Member {
        handle: handle.to_owned(),
        niche_slug: niche_slug.to_owned(),
        role: role.into(),
        status: status.into(),
        share_cap_bps: cap,
    }
}
