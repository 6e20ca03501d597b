//! The tier ladder: the one source of truth for tiers (data).

use sea_orm::entity::prelude::*;

/// One row of `contribution_tiers`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "contribution_tiers")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Display name.
    #[sea_orm(unique)]
    pub name: String,
    /// The lowest score in this tier.
    #[sea_orm(unique)]
    pub min_score: i64,
    /// Share of a niche's revenue, basis points.
    pub share_bps: i32,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
