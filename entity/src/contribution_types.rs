//! The kinds of contribution and the points they earn (data).

use sea_orm::entity::prelude::*;

/// One row of `contribution_types`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "contribution_types")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Stable key (`agent_answer`, `manual_adjustment`).
    #[sea_orm(unique)]
    pub key: String,
    /// Display name.
    pub name: String,
    /// Points an event earns before diminishing.
    pub default_points: i64,
    /// Fewest points an event of this type may carry.
    pub min_points: i64,
    /// Most points an event of this type may carry.
    pub max_points: i64,
    /// Verified events in the window before points diminish.
    pub diminish_after: Option<i32>,
    /// The window, in days.
    pub diminish_window_days: Option<i32>,
    /// Whether only admins may record it.
    pub admin_only: bool,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
