//! One version of one piece of a niche's knowledge: a verified answer to a question (or, later,
//! a verified correction of one). Versions are appended, never edited: a newer version names the
//! one it replaces, and only a version's status (and when and why it ended) ever changes.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `knowledge_entries`. PostgreSQL also has a generated `search` column (the
/// full-text vector); SQLite keeps that in the `knowledge_search` FTS5 table.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "knowledge_entries")]
pub struct Model {
    /// Primary key: the entry's id.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche it belongs to.
    pub niche_id: i64,
    /// The question it answers (the source question).
    pub question_id: i64,
    /// The answer it was made from.
    pub answer_id: Option<i64>,
    /// The contribution whose verification wrote it (one entry per contribution).
    pub contribution_event_id: i64,
    /// 1 for a question's first entry, one more for each after it.
    pub version: i64,
    /// The version it replaces.
    pub replaces: Option<i64>,
    /// Current, superseded or retracted.
    pub status: KnowledgeStatus,
    /// The question's title.
    #[sea_orm(column_type = "Text")]
    pub title: String,
    /// The question's text.
    #[sea_orm(column_type = "Text")]
    pub question: String,
    /// The chosen option's id.
    #[sea_orm(column_type = "Text", nullable)]
    pub option_id: Option<String>,
    /// The chosen option's label, as the question offered it.
    #[sea_orm(column_type = "Text", nullable)]
    pub option_label: Option<String>,
    /// The answer's words.
    #[sea_orm(column_type = "Text", nullable)]
    pub answer: Option<String>,
    /// Who answered.
    pub answered_by: i64,
    /// Who verified it on review; none when the niche trusted the answerer on arrival.
    pub verified_by: Option<i64>,
    /// How it was verified.
    pub verification: Verification,
    /// When it was verified.
    pub verified_at: DateTimeUtc,
    /// When it stopped being current (superseded or retracted).
    pub ended_at: Option<DateTimeUtc>,
    /// Why: the reviewer's note on a retraction.
    #[sea_orm(column_type = "Text", nullable)]
    pub ended_reason: Option<String>,
    /// When it was written.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Where an entry is in its life.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum KnowledgeStatus {
    /// `current`: the version to rely on.
    #[sea_orm(string_value = "current")]
    Current,
    /// `superseded`: a newer version replaced it.
    #[sea_orm(string_value = "superseded")]
    Superseded,
    /// `retracted`: the answer it was made from was rejected or reversed.
    #[sea_orm(string_value = "retracted")]
    Retracted,
}

/// How an entry's answer was verified.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum Verification {
    /// `trust`: verified on arrival, the niche trusting its answerer.
    #[sea_orm(string_value = "trust")]
    Trust,
    /// `review`: verified by a second person.
    #[sea_orm(string_value = "review")]
    Review,
}
