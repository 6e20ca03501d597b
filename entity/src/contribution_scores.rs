//! Cached scores per (niche, person), always recomputed by summation.

use sea_orm::entity::prelude::*;

/// One row of `contribution_scores`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "contribution_scores")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche.
    pub niche_id: i64,
    /// The person.
    pub user_id: i64,
    /// Sum of verified points, never below 0.
    pub score: i64,
    /// Verified events.
    pub verified_count: i64,
    /// Events awaiting review.
    pub pending_count: i64,
    /// The tier the score is in.
    pub tier_id: i64,
    /// When it was recomputed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
