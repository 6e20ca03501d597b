//! Allocations: a revenue event's net split among members (and the platform), shares stamped.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `allocations`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "allocations")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The revenue event.
    pub revenue_event_id: i64,
    /// The niche.
    pub niche_id: i64,
    /// The person; `None` for the platform.
    pub user_id: Option<i64>,
    /// The share applied, basis points, as it was at finalisation.
    pub share_bps: i32,
    /// The amount, minor units.
    pub amount_minor: i64,
    /// Where it is on its way to being paid.
    pub status: AllocationStatus,
    /// The payout it is in, while it is in one.
    pub payout_id: Option<i64>,
    /// For a clawback (a negative amount): the paid allocation it takes back.
    pub claws_back: Option<i64>,
    /// When it was made.
    pub created_at: DateTimeUtc,
    /// When its status last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Where an allocation is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum AllocationStatus {
    /// `held`: the bounty of an answer still in review; shown, not owed, in no payout.
    #[sea_orm(string_value = "held")]
    Held,
    /// `accrued`: owed.
    #[sea_orm(string_value = "accrued")]
    Accrued,
    /// `scheduled`: in a payout, in flight.
    #[sea_orm(string_value = "scheduled")]
    Scheduled,
    /// `paid`.
    #[sea_orm(string_value = "paid")]
    Paid,
    /// `reversed`.
    #[sea_orm(string_value = "reversed")]
    Reversed,
}
