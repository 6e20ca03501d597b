//! URLs people register to hear of new and escalated questions in a niche.

use sea_orm::entity::prelude::*;

/// One row of `operator_webhooks`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "operator_webhooks")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Who registered it.
    pub user_id: i64,
    /// The niche it hears about.
    pub niche_id: i64,
    /// Where events are POSTed.
    pub url: String,
    /// The signing secret (sealed when `ASKLOOP_DATA_KEY` is set).
    pub secret: String,
    /// When it was registered.
    pub created_at: DateTimeUtc,
    /// When it was removed; a removed webhook receives nothing more.
    pub revoked_at: Option<DateTimeUtc>,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
