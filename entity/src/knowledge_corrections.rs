//! A correction a member proposed to a knowledge entry: a new option and/or new words, and a
//! note. It is a contribution of its own, reviewed like an answer; verified, it is written as
//! the entry's next version.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `knowledge_corrections`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "knowledge_corrections")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The entry it corrects (the version that was current when it was proposed).
    pub entry_id: i64,
    /// The entry's niche.
    pub niche_id: i64,
    /// Who proposed it.
    pub proposed_by: i64,
    /// The option it chooses instead, if it changes the option.
    #[sea_orm(column_type = "Text", nullable)]
    pub option_id: Option<String>,
    /// The words it gives instead, if it changes the words.
    #[sea_orm(column_type = "Text", nullable)]
    pub answer: Option<String>,
    /// Why, for the reviewer.
    #[sea_orm(column_type = "Text", nullable)]
    pub note: Option<String>,
    /// The contribution it is.
    pub contribution_event_id: i64,
    /// Pending, verified or rejected.
    pub status: CorrectionStatus,
    /// When it was proposed.
    pub created_at: DateTimeUtc,
    /// When it was verified or rejected.
    pub decided_at: Option<DateTimeUtc>,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Where a correction is in review.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum CorrectionStatus {
    /// `pending`: waiting for someone other than its author.
    #[sea_orm(string_value = "pending")]
    Pending,
    /// `verified`: written as the entry's next version.
    #[sea_orm(string_value = "verified")]
    Verified,
    /// `rejected`: the entry stays as it was.
    #[sea_orm(string_value = "rejected")]
    Rejected,
}
