//! Questions agents ask. `context` is UNTRUSTED: display it only as escaped text.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `agent_questions`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "agent_questions")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The niche asked.
    pub niche_id: i64,
    /// The agent's own id; unique per niche when present.
    pub external_id: Option<String>,
    /// Which agent asked, as it named itself in the body (`agentId`); free text.
    pub agent_id: Option<String>,
    /// The registered agent that asked (`X-Askloop-Agent`); none for the built-in default agent.
    pub registered_agent_id: Option<i64>,
    /// Up to 300 chars.
    pub title: String,
    /// Up to 8000 chars.
    pub question: String,
    /// UNTRUSTED agent research, up to 20000 chars: escaped text only, never instructions.
    #[sea_orm(column_type = "Text", nullable)]
    pub context: Option<String>,
    /// The options as a JSON list of `{id, label}`.
    pub options: Json,
    /// `low`, `normal` or `high`.
    pub urgency: Urgency,
    /// high = 0, normal = 1, low = 2: the queue's sort key.
    pub urgency_rank: i16,
    /// JSON list of resource ids.
    pub related_resource_ids: Json,
    /// Where the question is.
    pub status: QuestionStatus,
    /// The bounty reserved for its answer, minor units.
    pub bounty_minor: i64,
    /// How many times research has come back.
    pub research_round: i64,
    /// The last round whose declines the agent was told about (`expert_question.needs_context`).
    pub needs_context_round: Option<i64>,
    /// When it stops waiting.
    pub expires_at: DateTimeUtc,
    /// When it arrived.
    pub created_at: DateTimeUtc,
    /// When it was answered.
    pub answered_at: Option<DateTimeUtc>,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
    /// When its next escalation step is due, if one is (docs/contract.md#escalation).
    pub escalate_at: Option<DateTimeUtc>,
    /// The last escalation step taken in its current round (0 none, 1 everyone, 2 admins).
    pub escalation_step: i32,
    /// A question, or a task handed to people; a task's budget limit is `bounty_minor`.
    pub kind: ExchangeKind,
    /// What a task should deliver, in the agent's words (tasks only; up to 500 chars).
    #[sea_orm(column_type = "Text", nullable)]
    pub deliverable: Option<String>,
    /// How many answers the question takes in a round (1: the first answer settles it).
    pub answers_wanted: i32,
    /// The share of the answers the plurality option needs for a consensus, in basis points.
    pub agreement_bps: i32,
    /// How many answers of this round stand (several-answer questions count here).
    pub answers_in: i32,
    /// When its agent withdrew it (it is `dismissed`); none when it was not withdrawn.
    pub withdrawn_at: Option<DateTimeUtc>,
}

/// The niche a question is asked in.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    /// The niche.
    #[sea_orm(
        belongs_to = "super::niches::Entity",
        from = "Column::NicheId",
        to = "super::niches::Column::Id"
    )]
    Niche,
}

impl Related<super::niches::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Niche.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

/// How urgent the agent says a question is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum Urgency {
    /// `low`.
    #[sea_orm(string_value = "low")]
    Low,
    /// `normal`.
    #[sea_orm(string_value = "normal")]
    Normal,
    /// `high`.
    #[sea_orm(string_value = "high")]
    High,
}

/// Where a question is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    /// `open`.
    #[sea_orm(string_value = "open")]
    Open,
    /// `researching`.
    #[sea_orm(string_value = "researching")]
    Researching,
    /// `answered`.
    #[sea_orm(string_value = "answered")]
    Answered,
    /// `dismissed`.
    #[sea_orm(string_value = "dismissed")]
    Dismissed,
    /// `expired`.
    #[sea_orm(string_value = "expired")]
    Expired,
}

/// The statuses in which a question still waits for an answer (open, or back with its agent
/// for research); the live feed, expiry and the answer path all read this one list.
pub const WAITING: [QuestionStatus; 2] = [QuestionStatus::Open, QuestionStatus::Researching];

/// What an agent hands to people.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum ExchangeKind {
    /// `question`: answered for its bounty.
    #[sea_orm(string_value = "question")]
    Question,
    /// `task`: completed for an actual cost up to its limit.
    #[sea_orm(string_value = "task")]
    Task,
}
