//! The append-only audit log.

use sea_orm::entity::prelude::*;

/// One row of `audit_log`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Who acted: `user:<id>`, `agent:<id>`, `system` or `cli`.
    pub actor: String,
    /// What happened (`question.created`, …).
    pub action: String,
    /// The kind of thing it happened to.
    pub subject_type: String,
    /// Its id.
    pub subject_id: String,
    /// The niche, when there is one.
    pub niche_id: Option<i64>,
    /// Details, JSON.
    pub detail: Json,
    /// When.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
