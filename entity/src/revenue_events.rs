//! Revenue events: money a niche earned, net of its costs, booked once per external id.

use sea_orm::entity::prelude::*;

/// One row of `revenue_events`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "revenue_events")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche.
    pub niche_id: i64,
    /// The source's id; books once.
    #[sea_orm(unique)]
    pub external_id: String,
    /// Where the money came from (`subscription`, `agent_bounty`, …).
    pub source_type: String,
    /// Gross, minor units.
    pub gross_minor: i64,
    /// Processing cost.
    pub processing_minor: i64,
    /// Network cost.
    pub network_minor: i64,
    /// Infrastructure cost.
    pub infra_minor: i64,
    /// Refunds.
    pub refund_minor: i64,
    /// max(0, gross − costs).
    pub net_minor: i64,
    /// ISO 4217 code.
    pub currency: String,
    /// The question, for a bounty.
    pub question_id: Option<i64>,
    /// When it was booked and finalised.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
