//! Escalation steps taken: one row per (question, round, step).

use sea_orm::entity::prelude::*;

/// One row of `escalations`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "escalations")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The question.
    pub question_id: i64,
    /// Its round when the step was taken (a reopened question starts again).
    pub round: i64,
    /// 1 (everyone of the niche) or 2 (its admins).
    pub step: i32,
    /// When.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
