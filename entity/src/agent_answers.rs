//! One answer (or decline) per person per question.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `agent_answers`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "agent_answers")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The question.
    pub question_id: i64,
    /// Who answered.
    pub user_id: i64,
    /// What kind of answer.
    pub kind: AnswerKind,
    /// The option chosen.
    pub option_id: Option<String>,
    /// The words, up to 8000 chars (a task's result, up to 20000).
    #[sea_orm(column_type = "Text", nullable)]
    pub body: Option<String>,
    /// What completing a task cost, as the person reported it (task completions only).
    pub actual_cost_minor: Option<i64>,
    /// The contribution it earned.
    pub contribution_event_id: Option<i64>,
    /// The question's research round when this answer was given.
    pub research_round: i64,
    /// The knowledge entry the answer pointed to, when it settled the question from knowledge.
    pub knowledge_entry_id: Option<i64>,
    /// How sure the answerer said they were, in percent (50–100), when they said.
    pub confidence: Option<i32>,
    /// One of a several-answer question's answers (the one-winner rule is for the others).
    pub one_of_several: bool,
    /// When it was given.
    pub created_at: DateTimeUtc,
    /// When it last changed (a decline may be replaced while the question waits).
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Three answers, two of which are not answers.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// `answered`.
    #[sea_orm(string_value = "answered")]
    Answered,
    /// `insufficient_context`.
    #[sea_orm(string_value = "insufficient_context")]
    InsufficientContext,
    /// `needs_research`.
    #[sea_orm(string_value = "needs_research")]
    NeedsResearch,
}
