//! Scores, tiers and contributions: recording a contribution, recomputing a member's score by
//! summation (never incrementing), and appending tier changes to the history.

use chrono::{DateTime, Utc};
use entity::contribution_events::{self, ContributionStatus};
use entity::{contribution_scores, contribution_tiers, contribution_types, tier_history};
use sea_orm::sea_query::{Expr, Func, OnConflict, SimpleExpr};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet, QueryFilter, QueryOrder,
    QuerySelect,
};

use crate::db::WriteTxn;
use crate::domain::scoring::{self, ContributionState, Tier};
use crate::error::ServiceError;

/// The tier ladder, lowest first.
pub async fn ladder<C: ConnectionTrait>(conn: &C) -> Result<Vec<Tier>, ServiceError> {
    Ok(contribution_tiers::Entity::find()
        .order_by_asc(contribution_tiers::Column::MinScore)
        .all(conn)
        .await?
        .into_iter()
        .map(|t| Tier {
            id: t.id,
            name: t.name,
            min_score: t.min_score,
            share_bps: u32::try_from(t.share_bps).unwrap_or(0),
        })
        .collect())
}

/// A contribution type by key.
pub async fn contribution_type<C: ConnectionTrait>(
    conn: &C,
    key: &str,
) -> Result<contribution_types::Model, ServiceError> {
    contribution_types::Entity::find()
        .filter(contribution_types::Column::Key.eq(key))
        .one(conn)
        .await?
        .ok_or_else(|| {
            ServiceError::Internal(anyhow::anyhow!("contribution type '{key}' is not seeded"))
        })
}

/// How the rules see a stored status.
pub fn state_of(status: ContributionStatus) -> ContributionState {
    match status {
        ContributionStatus::Pending => ContributionState::Pending,
        ContributionStatus::Verified => ContributionState::Verified,
        ContributionStatus::Rejected => ContributionState::Rejected,
        ContributionStatus::Reversed => ContributionState::Reversed,
    }
}

/// A member's standing after a recompute.
#[derive(Debug, Clone)]
pub struct Standing {
    /// Sum of verified points.
    pub score: i64,
    /// Verified contributions.
    pub verified_count: i64,
    /// Contributions awaiting review.
    pub pending_count: i64,
    /// The tier the score is in.
    pub tier: Tier,
}

/// Recompute `(niche, user)`'s score from all their events, store it, and append to the tier
/// history when the tier changed (or on the first score).
pub async fn recompute(
    conn: &WriteTxn,
    niche_id: i64,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<Standing, ServiceError> {
    // Added up by the database in one row (the score is the verified points, at least 0:
    // `scoring::score`), so a long history is never sent across the connection of the
    // transaction that holds the writer.
    let status = || contribution_events::Column::Status;
    let count_of = |status: SimpleExpr| -> SimpleExpr {
        Func::count(Expr::case(status, Expr::val(1)).finally(Expr::null())).into()
    };
    let (verified_points, verified_count, pending_count): (Option<i64>, i64, i64) =
        contribution_events::Entity::find()
            .select_only()
            .column_as(
                SimpleExpr::from(Func::cast_as(
                    Func::sum(
                        Expr::case(
                            status().eq(ContributionStatus::Verified),
                            Expr::col(contribution_events::Column::Points),
                        )
                        .finally(Expr::val(0)),
                    ),
                    sea_orm::sea_query::Alias::new("BIGINT"),
                )),
                "verified_points",
            )
            .column_as(
                count_of(status().eq(ContributionStatus::Verified)),
                "verified",
            )
            .column_as(
                count_of(status().eq(ContributionStatus::Pending)),
                "pending",
            )
            .filter(contribution_events::Column::NicheId.eq(niche_id))
            .filter(contribution_events::Column::UserId.eq(user_id))
            .into_tuple()
            .one(conn)
            .await?
            .unwrap_or((None, 0, 0));
    let score = verified_points.unwrap_or(0).max(0);
    let ladder = ladder(conn).await?;
    let tier = scoring::tier_for(score, &ladder)
        .cloned()
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("the tier ladder is empty")))?;

    let previous = contribution_scores::Entity::find()
        .filter(contribution_scores::Column::NicheId.eq(niche_id))
        .filter(contribution_scores::Column::UserId.eq(user_id))
        .one(conn)
        .await?;
    contribution_scores::Entity::insert(contribution_scores::ActiveModel {
        id: NotSet,
        niche_id: Set(niche_id),
        user_id: Set(user_id),
        score: Set(score),
        verified_count: Set(verified_count),
        pending_count: Set(pending_count),
        tier_id: Set(tier.id),
        updated_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            contribution_scores::Column::NicheId,
            contribution_scores::Column::UserId,
        ])
        .update_columns([
            contribution_scores::Column::Score,
            contribution_scores::Column::VerifiedCount,
            contribution_scores::Column::PendingCount,
            contribution_scores::Column::TierId,
            contribution_scores::Column::UpdatedAt,
        ])
        .to_owned(),
    )
    .exec_without_returning(conn)
    .await?;

    let from_tier = previous.map(|p| p.tier_id);
    if from_tier != Some(tier.id) {
        tier_history::Entity::insert(tier_history::ActiveModel {
            id: NotSet,
            niche_id: Set(niche_id),
            user_id: Set(user_id),
            from_tier_id: Set(from_tier),
            to_tier_id: Set(tier.id),
            score: Set(score),
            created_at: Set(now),
        })
        .exec_without_returning(conn)
        .await?;
    }
    Ok(Standing {
        score,
        verified_count,
        pending_count,
        tier,
    })
}

/// A person's answers in a niche, as the answering rules count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AnswerCounts {
    /// Verified answers since the window's start (all of them without one): diminishing returns.
    pub verified_in_window: u64,
    /// Verified answers: the trust rule's successes.
    pub verified: u64,
    /// Answers with a verdict (verified, rejected or reversed): the trust rule's trials.
    pub judged: u64,
}

/// The states that are a verdict on an answer: verified counts for it, the others against.
pub const JUDGED: [ContributionStatus; 3] = [
    ContributionStatus::Verified,
    ContributionStatus::Rejected,
    ContributionStatus::Reversed,
];
