//! Delegated tasks (docs/contract.md#delegated-tasks): an exchange is a question or a task. A
//! task carries its budget limit in `bounty_minor` (reserved like a bounty) and an optional
//! deliverable hint; its completion is an answer row that also records the actual cost the
//! person reported. The agent hears of a completion as `task.completed`.

use crate::prelude::*;
use crate::sea_orm::{ConnectionTrait, Statement};
use crate::sea_query::ExprTrait;

use crate::checks::{one_of as check_one_of, replace_check};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261201_000017_delegated_tasks"
    }
}

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
];

/// The event type added.
const EVENTS_ADDED: &[&str] = &["task.completed"];

#[derive(DeriveIden, Clone)]
enum AgentQuestions {
    Table,
    Kind,
    Deliverable,
}

#[derive(DeriveIden, Clone)]
enum AgentAnswers {
    Table,
    ActualCostMinor,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: on SQLite the check is changed on one connection.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        replace_check(
            manager,
            "deliveries",
            "event_type",
            &check_one_of("event_type", EVENTS_BEFORE),
            &check_one_of("event_type", &after),
        )
        .await?;
        // SQLite adds one column per ALTER TABLE statement.
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .add_column(
                        ColumnDef::new(AgentQuestions::Kind)
                            .string()
                            .not_null()
                            .default("question")
                            .check(Expr::col(AgentQuestions::Kind).is_in(["question", "task"])),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .add_column(ColumnDef::new(AgentQuestions::Deliverable).text().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentAnswers::Table)
                    .add_column(
                        ColumnDef::new(AgentAnswers::ActualCostMinor)
                            .big_integer()
                            .null()
                            .check(Expr::col(AgentAnswers::ActualCostMinor).gte(0)),
                    )
                    .to_owned(),
            )
            .await
    }

    /// Refused while any task is stored: below this migration a task would read as a question
    /// whose whole limit is its bounty, so completing it would charge the limit instead of what
    /// it cost, and its `task.completed` events could not be kept.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let tasks: i64 = db
            .query_one_raw(Statement::from_string(
                manager.get_database_backend(),
                "SELECT COUNT(*) FROM agent_questions WHERE kind = 'task'",
            ))
            .await?
            .map(|row| row.try_get_by_index(0))
            .transpose()?
            .unwrap_or(0);
        if tasks > 0 {
            return Err(DbErr::Migration(format!(
                "{tasks} delegated task(s) are stored; askloop before this migration cannot \
                 charge a task what it cost, so it is not undone while tasks exist"
            )));
        }
        manager
            .alter_table(
                Table::alter()
                    .table(AgentAnswers::Table)
                    .drop_column(AgentAnswers::ActualCostMinor)
                    .to_owned(),
            )
            .await?;
        for column in [AgentQuestions::Deliverable, AgentQuestions::Kind] {
            manager
                .alter_table(
                    Table::alter()
                        .table(AgentQuestions::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        replace_check(
            manager,
            "deliveries",
            "event_type",
            &check_one_of("event_type", &after),
            &check_one_of("event_type", EVENTS_BEFORE),
        )
        .await
    }
}
