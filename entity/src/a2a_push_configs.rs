//! Where an agent asked to hear of one of its A2A tasks (docs/contract.md#a2a).

use sea_orm::entity::prelude::*;

/// One row of `a2a_push_configs`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "a2a_push_configs")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The question the task is.
    pub question_id: i64,
    /// The registered agent that asked it.
    pub agent_id: i64,
    /// The config's id, as the agent named it (or askloop did); unique per question.
    #[sea_orm(column_type = "Text")]
    pub config_id: String,
    /// Where pushes go.
    #[sea_orm(column_type = "Text")]
    pub url: String,
    /// Sent back with every push (`X-A2A-Notification-Token`).
    #[sea_orm(column_type = "Text", nullable)]
    pub token: Option<String>,
    /// The `Authorization` scheme to send (`Bearer`, …), if any.
    #[sea_orm(column_type = "Text", nullable)]
    pub auth_scheme: Option<String>,
    /// The credentials after the scheme.
    #[sea_orm(column_type = "Text", nullable)]
    pub auth_credentials: Option<String>,
    /// When it was set.
    pub created_at: DateTimeUtc,
    /// When it was last set.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
