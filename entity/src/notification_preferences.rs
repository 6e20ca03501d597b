//! What a person wants mailed about one niche.

use sea_orm::entity::prelude::*;

/// One row of `notification_preferences` (one per person and niche; none means the defaults).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notification_preferences")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The person.
    pub user_id: i64,
    /// The niche.
    pub niche_id: i64,
    /// `false` when they want no mail about this niche (unsubscribed).
    pub enabled: bool,
    /// The urgencies mailed at once, comma-separated (`low`, `normal`, `high`).
    pub immediate_urgencies: String,
    /// How the other urgencies are gathered: `hourly`, `daily` or `off`.
    pub digest: String,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
