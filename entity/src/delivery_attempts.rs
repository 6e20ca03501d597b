//! Every attempt to send a delivery, with what came of it.

use sea_orm::entity::prelude::*;

/// One row of `delivery_attempts`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "delivery_attempts")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The delivery.
    pub delivery_id: i64,
    /// When it was sent.
    pub attempted_at: DateTimeUtc,
    /// The HTTP status, if one came back.
    pub status_code: Option<i32>,
    /// How long it took.
    pub duration_ms: i64,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// `delivered`, `retry` or `exhausted`.
    pub outcome: String,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
