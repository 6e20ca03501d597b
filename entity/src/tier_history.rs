//! Every tier change, append-only.

use sea_orm::entity::prelude::*;

/// One row of `tier_history`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tier_history")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche.
    pub niche_id: i64,
    /// The person.
    pub user_id: i64,
    /// The tier before, if any.
    pub from_tier_id: Option<i64>,
    /// The tier after.
    pub to_tier_id: i64,
    /// The score that moved them.
    pub score: i64,
    /// When.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
