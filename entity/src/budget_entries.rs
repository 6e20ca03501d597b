//! The budget ledger of bounties: append-only reserve, charge, release and charge-reversal
//! entries.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `budget_entries`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "budget_entries")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche whose budget it is.
    pub niche_id: i64,
    /// The question whose bounty it is.
    pub question_id: i64,
    /// What happened to the bounty.
    pub kind: BudgetEntryKind,
    /// How much, minor units.
    pub amount_minor: i64,
    /// The budget month it was made in (`YYYY-MM`, UTC); a charge counts in its month.
    pub month: String,
    /// When.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// What happened to a bounty.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum BudgetEntryKind {
    /// `reserve`: set aside at intake.
    #[sea_orm(string_value = "reserve")]
    Reserve,
    /// `charge`: spent when the question was answered.
    #[sea_orm(string_value = "charge")]
    Charge,
    /// `release`: given back when the question was dismissed or expired.
    #[sea_orm(string_value = "release")]
    Release,
    /// `charge_reversal`: a charge given back because its answer was rejected or reversed.
    #[sea_orm(string_value = "charge_reversal")]
    ChargeReversal,
}
