//! The reuse ledger of knowledge (docs/contract.md#knowledge): one `reuse` row each time an agent
//! relies on an entry instead of asking again (or an operator settles a question by pointing to
//! one), with what it cost and the revenue event that paid the entry's author; one `refund` row,
//! naming it, when the entry is retracted. Append-only.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `knowledge_reuses`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "knowledge_reuses")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The entry's niche.
    pub niche_id: i64,
    /// The entry relied on (the version current when it was reused).
    pub entry_id: i64,
    /// A reuse or the refund of one.
    pub kind: ReuseKind,
    /// The registered agent that relied on it; none for the default agent.
    pub agent_id: Option<i64>,
    /// The agent's id for the reuse (unique per niche); none for a question settled from it.
    pub external_id: Option<String>,
    /// The question settled by pointing to the entry, if that is how it was relied on.
    pub question_id: Option<i64>,
    /// The answer that pointed to it.
    pub answer_id: Option<i64>,
    /// What it cost the agent (a refund: what it gave back), minor units.
    pub amount_minor: i64,
    /// The budget month it counts in (`YYYY-MM`, UTC).
    pub month: String,
    /// The revenue event that booked the cost for the author (none when free).
    pub revenue_event_id: Option<i64>,
    /// A refund: the reuse it gives back.
    pub refunds: Option<i64>,
    /// When.
    pub created_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// A reuse, or the refund of one.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum ReuseKind {
    /// `reuse`: an agent relied on the entry.
    #[sea_orm(string_value = "reuse")]
    Reuse,
    /// `refund`: the entry was retracted, and the reuse's cost given back.
    #[sea_orm(string_value = "refund")]
    Refund,
}
