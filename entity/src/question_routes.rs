//! Whom a question's first wave of notifications went to, best first, and why.

use sea_orm::entity::prelude::*;

/// One row of `question_routes`.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "question_routes")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The question.
    pub question_id: i64,
    /// The operator notified in the first wave.
    pub user_id: i64,
    /// Their place in the wave, 1 first.
    pub rank: i32,
    /// The score they were picked by (relevance of their verified answers times their record).
    pub score: f64,
    /// Why, in words an admin reads.
    #[sea_orm(column_type = "Text")]
    pub reason: String,
    /// When.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
