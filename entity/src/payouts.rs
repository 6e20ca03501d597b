//! Payouts: a person's owed allocations gathered for settlement outside askloop.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `payouts`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payouts")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The person paid.
    pub user_id: i64,
    /// The sum of its allocations.
    pub amount_minor: i64,
    /// ISO 4217.
    pub currency: String,
    /// Where it is.
    pub status: PayoutStatus,
    /// The address it goes to, as verified when scheduled.
    pub address: String,
    /// The settlement's reference, once paid (unique).
    #[sea_orm(unique)]
    pub external_reference: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// The admin who scheduled it.
    pub created_by: i64,
    /// When it was scheduled.
    pub created_at: DateTimeUtc,
    /// When it was paid or failed.
    pub settled_at: Option<DateTimeUtc>,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Where a payout is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum PayoutStatus {
    /// `scheduled`: its allocations are in flight.
    #[sea_orm(string_value = "scheduled")]
    Scheduled,
    /// `paid`: settled, with a reference.
    #[sea_orm(string_value = "paid")]
    Paid,
    /// `failed`: its allocations are owed again.
    #[sea_orm(string_value = "failed")]
    Failed,
}
