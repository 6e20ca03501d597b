//! Answers you can weigh (docs/contract.md#weighing-answers).
//!
//! - `agent_answers.confidence`: how sure the answerer said they were, 50–100 percent, or null.
//! - `niches.trust_lower_bound_bps`: a member's answers verify on arrival once the Wilson lower
//!   bound of their verified rate in the niche reaches it (default 0.85).
//! - `niches.first_wave`: null notifies every operator at once; k notifies the k best-placed
//!   operators first and the rest at half the escalation wait.
//! - `agent_questions.answers_wanted` (1–7; 1 is one answer settling the question),
//!   `agreement_bps` (the share the plurality option needs for a consensus, 0.5–1.0) and
//!   `answers_in` (how many answers of this round stand: the counter every answer claims a place
//!   with in one conditional update, so no more than `answers_wanted` stand under any race).
//! - `agent_answers.one_of_several`: the answer is one of a several-answer question's; the
//!   one-winner index (one `answered` row per question and round) holds for the others only.
//! - `question_routes`: whom a question's first wave went to, in what order and why.
//! - Deliveries may carry `expert_question.consensus` and `expert_question.disagreement`.

use crate::prelude::*;
use crate::sea_query::ExprTrait;

use crate::checks::{count, one_of as check_one_of, replace_check};
use crate::columns::{basis_points, foreign_key, id, reference, timestamp};

/// The event types before this migration.
const EVENTS_BEFORE: &[&str] = &[
    "expert_answer.created",
    "agent.research_requested",
    "expert_question.expired",
    "expert_question.dismissed",
    "expert_question.needs_context",
    "expert_answer.verified",
    "expert_answer.rejected",
    "expert_question.escalated",
    "question.waiting",
    "question.escalated",
    "task.completed",
    "knowledge.superseded",
    "knowledge.retracted",
];

/// The event types added: what several answers came to.
const EVENTS_ADDED: &[&str] = &["expert_question.consensus", "expert_question.disagreement"];

/// Change the deliveries' event check from `from` to `to`.
async fn events(manager: &SchemaManager<'_>, from: &[&str], to: &[&str]) -> Result<(), DbErr> {
    replace_check(
        manager,
        "deliveries",
        "event_type",
        &check_one_of("event_type", from),
        &check_one_of("event_type", to),
    )
    .await
}

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261204_000023_weighed_answers"
    }
}

#[derive(DeriveIden, Clone)]
enum AgentAnswers {
    Table,
    Confidence,
    OneOfSeveral,
}

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
    TrustLowerBoundBps,
    FirstWave,
}

#[derive(DeriveIden, Clone)]
enum AgentQuestions {
    Table,
    AnswersWanted,
    AgreementBps,
    AnswersIn,
}

#[derive(DeriveIden, Clone)]
enum QuestionRoutes {
    Table,
    Id,
    QuestionId,
    UserId,
    Rank,
    Score,
    Reason,
    CreatedAt,
}

fn between<T: IntoIden + Clone + 'static>(
    column: ColumnDef,
    name: T,
    low: i32,
    high: i32,
) -> ColumnDef {
    column
        .clone()
        .check(
            Expr::col(name.clone())
                .gte(low)
                .and(Expr::col(name).lte(high)),
        )
        .take()
}

/// The unique index that keeps one `answered` row per question and round, over the rows
/// `condition` picks.
async fn one_winner_where(manager: &SchemaManager<'_>, condition: &str) -> Result<(), DbErr> {
    let db = manager.get_connection();
    db.execute_unprepared("DROP INDEX agent_answers_one_winner_key")
        .await?;
    db.execute_unprepared(&format!(
        "CREATE UNIQUE INDEX agent_answers_one_winner_key \
         ON agent_answers (question_id, research_round) WHERE {condition}"
    ))
    .await?;
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: on SQLite the check is changed on one connection.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let columns: Vec<(DynIden, ColumnDef)> = vec![
            (
                AgentAnswers::Table.into_iden(),
                between(
                    ColumnDef::new(AgentAnswers::Confidence)
                        .integer()
                        .null()
                        .take(),
                    AgentAnswers::Confidence,
                    50,
                    100,
                ),
            ),
            (
                Niches::Table.into_iden(),
                basis_points(Niches::TrustLowerBoundBps, 10_000)
                    .default(8500)
                    .take(),
            ),
            (
                Niches::Table.into_iden(),
                between(
                    ColumnDef::new(Niches::FirstWave).integer().null().take(),
                    Niches::FirstWave,
                    1,
                    50,
                ),
            ),
            (
                AgentQuestions::Table.into_iden(),
                between(
                    ColumnDef::new(AgentQuestions::AnswersWanted)
                        .integer()
                        .not_null()
                        .default(1)
                        .take(),
                    AgentQuestions::AnswersWanted,
                    1,
                    7,
                ),
            ),
            (
                AgentQuestions::Table.into_iden(),
                between(
                    ColumnDef::new(AgentQuestions::AgreementBps)
                        .integer()
                        .not_null()
                        .default(5000)
                        .take(),
                    AgentQuestions::AgreementBps,
                    5000,
                    10_000,
                ),
            ),
            (
                AgentQuestions::Table.into_iden(),
                between(
                    ColumnDef::new(AgentQuestions::AnswersIn)
                        .integer()
                        .not_null()
                        .default(0)
                        .take(),
                    AgentQuestions::AnswersIn,
                    0,
                    7,
                ),
            ),
            (
                AgentAnswers::Table.into_iden(),
                ColumnDef::new(AgentAnswers::OneOfSeveral)
                    .boolean()
                    .not_null()
                    .default(false)
                    .take(),
            ),
        ];
        // One column a statement: SQLite alters one thing at a time.
        for (table, mut column) in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        one_winner_where(manager, "kind = 'answered' AND one_of_several = false").await?;
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        events(manager, EVENTS_BEFORE, &after).await?;
        manager
            .create_table(
                Table::create()
                    .table(QuestionRoutes::Table)
                    .col(id(QuestionRoutes::Id))
                    .col(reference(QuestionRoutes::QuestionId))
                    .col(reference(QuestionRoutes::UserId))
                    .col(ColumnDef::new(QuestionRoutes::Rank).integer().not_null())
                    .col(ColumnDef::new(QuestionRoutes::Score).double().not_null())
                    .col(ColumnDef::new(QuestionRoutes::Reason).text().not_null())
                    .col(timestamp(QuestionRoutes::CreatedAt))
                    .foreign_key(&mut foreign_key(
                        QuestionRoutes::Table,
                        QuestionRoutes::QuestionId,
                        Alias::new("agent_questions"),
                    ))
                    .foreign_key(&mut foreign_key(
                        QuestionRoutes::Table,
                        QuestionRoutes::UserId,
                        Alias::new("users"),
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("question_routes_one_per_person")
                    .table(QuestionRoutes::Table)
                    .col(QuestionRoutes::QuestionId)
                    .col(QuestionRoutes::UserId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        Ok(())
    }

    /// Refused while a several-answer question is stored: askloop before this migration would
    /// read its answers as one winner each round.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let several = count(
            manager,
            "SELECT COUNT(*) FROM agent_questions WHERE answers_wanted > 1",
        )
        .await?;
        if several > 0 {
            return Err(DbErr::Migration(format!(
                "{several} question(s) take several answers; askloop before this migration \
                 cannot keep them, so it is not undone while they exist"
            )));
        }
        manager
            .drop_table(Table::drop().table(QuestionRoutes::Table).to_owned())
            .await?;
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        events(manager, &after, EVENTS_BEFORE).await?;
        one_winner_where(manager, "kind = 'answered'").await?;
        let columns: Vec<(DynIden, DynIden)> = vec![
            (
                AgentQuestions::Table.into_iden(),
                AgentQuestions::AnswersIn.into_iden(),
            ),
            (
                AgentQuestions::Table.into_iden(),
                AgentQuestions::AgreementBps.into_iden(),
            ),
            (
                AgentQuestions::Table.into_iden(),
                AgentQuestions::AnswersWanted.into_iden(),
            ),
            (Niches::Table.into_iden(), Niches::FirstWave.into_iden()),
            (
                Niches::Table.into_iden(),
                Niches::TrustLowerBoundBps.into_iden(),
            ),
            (
                AgentAnswers::Table.into_iden(),
                AgentAnswers::Confidence.into_iden(),
            ),
            (
                AgentAnswers::Table.into_iden(),
                AgentAnswers::OneOfSeveral.into_iden(),
            ),
        ];
        for (table, column) in columns {
            manager
                .alter_table(Table::alter().table(table).drop_column(column).to_owned())
                .await?;
        }
        Ok(())
    }
}
