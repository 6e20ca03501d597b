//! Niches: the field an agent works in and its operators answer for.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `niches`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "niches")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// Unique, lowercased slug.
    #[sea_orm(unique)]
    pub slug: String,
    /// Display name.
    pub name: String,
    /// What the niche covers.
    pub description: String,
    /// `draft`, `open`, `operated` or `archived`.
    pub status: NicheStatus,
    /// The agent that mainly asks here.
    pub primary_agent_id: Option<String>,
    /// Default bounty per answer, minor units.
    pub bounty_minor: i64,
    /// Highest bounty a question may carry, minor units.
    pub max_bounty_minor: i64,
    /// The agent's monthly budget, minor units; none means no budget is set.
    pub monthly_budget_minor: Option<i64>,
    /// How long a question waits unless it asks otherwise.
    pub default_question_lifetime_secs: i64,
    /// How many "not enough context" declines in one round tell the agent (or every active
    /// operator's, when there are fewer).
    pub declines_to_notify: i64,
    /// The month `budget_spent_minor` counts (`YYYY-MM`, UTC); none before the first entry.
    pub budget_month: Option<String>,
    /// What was charged (less charges given back) in `budget_month`, minor units.
    pub budget_spent_minor: i64,
    /// Reservations not yet charged or released, minor units.
    pub budget_reserved_minor: i64,
    /// How long a high-urgency question waits before it escalates (step 2 at twice it); none
    /// is never.
    pub escalate_high_secs: Option<i64>,
    /// The same for normal urgency.
    pub escalate_normal_secs: Option<i64>,
    /// The same for low urgency.
    pub escalate_low_secs: Option<i64>,
    /// How alike a current knowledge entry must be to a new question to be offered as similar
    /// (docs/contract.md#knowledge), in basis points of the question's content words it holds.
    pub similarity_threshold_bps: i32,
    /// What one reuse of the niche's knowledge costs an agent, minor units (0: free).
    pub reuse_price_minor: i64,
    /// The Wilson lower bound of a member's verified rate at which their answers verify on
    /// arrival, in basis points (8500: 0.85).
    pub trust_lower_bound_bps: i32,
    /// Routing: `None` notifies every operator at once; `Some(k)` the k best-placed first.
    pub first_wave: Option<i32>,
    /// When it was made.
    pub created_at: DateTimeUtc,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Where a niche is in its life.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum NicheStatus {
    /// `draft`.
    #[sea_orm(string_value = "draft")]
    Draft,
    /// `open`.
    #[sea_orm(string_value = "open")]
    Open,
    /// `operated`.
    #[sea_orm(string_value = "operated")]
    Operated,
    /// `archived`.
    #[sea_orm(string_value = "archived")]
    Archived,
}
