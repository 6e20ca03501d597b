//! Scored contributions: append-only, never deleted, never losing points.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `contribution_events`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "contribution_events")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche.
    pub niche_id: i64,
    /// Who contributed.
    pub user_id: i64,
    /// The contribution type.
    pub type_id: i64,
    /// Points, fixed at creation.
    pub points: i64,
    /// Review state.
    pub status: ContributionStatus,
    /// What produced it (`answer`, `admin`).
    pub source: String,
    /// Supporting facts, JSON.
    pub evidence: Json,
    /// Unique per (niche, person) when present.
    pub dedupe_key: Option<String>,
    /// When it was verified.
    pub verified_at: Option<DateTimeUtc>,
    /// Who verified it.
    pub verified_by: Option<i64>,
    /// The event this one reverses.
    pub reverses: Option<i64>,
    /// When it was recorded.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// A contribution's review state.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum ContributionStatus {
    /// `pending`.
    #[sea_orm(string_value = "pending")]
    Pending,
    /// `verified`.
    #[sea_orm(string_value = "verified")]
    Verified,
    /// `rejected`.
    #[sea_orm(string_value = "rejected")]
    Rejected,
    /// `reversed`.
    #[sea_orm(string_value = "reversed")]
    Reversed,
}
