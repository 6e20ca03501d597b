//! Where each person wants to be paid; changing the address clears its verification.

use sea_orm::entity::prelude::*;

/// One row of `payout_accounts`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "payout_accounts")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The person (one account each).
    #[sea_orm(unique)]
    pub user_id: i64,
    /// Where to pay (a bank or wallet reference; askloop sends no money itself).
    pub address: String,
    /// When an admin verified this address.
    pub verified_at: Option<DateTimeUtc>,
    /// Which admin.
    pub verified_by: Option<i64>,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
