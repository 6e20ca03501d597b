//! A2A push notifications (docs/contract.md#a2a).
//!
//! - `a2a_push_configs`: where an agent asked to hear of one of its tasks (a question): the
//!   config's id (the agent's, unique per question), the URL, the token sent back with every
//!   push, and the `Authorization` scheme and credentials to send, if any.
//! - `deliveries.push_config_id`: a delivery that is an A2A push goes to that config's URL; the
//!   outbox sends it like any other (retries, log, redelivery).
//! - Deliveries may carry `a2a.task_status`.

use crate::prelude::*;

use crate::checks::{count, one_of as check_one_of, replace_check};
use crate::columns::{foreign_key, id, reference, timestamp};

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
    "expert_question.consensus",
    "expert_question.disagreement",
];

/// The event type added: an A2A task's state, pushed.
const EVENTS_ADDED: &[&str] = &["a2a.task_status"];

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
        "m20261205_000025_a2a"
    }
}

#[derive(DeriveIden, Clone)]
enum A2aPushConfigs {
    Table,
    Id,
    QuestionId,
    AgentId,
    ConfigId,
    Url,
    Token,
    AuthScheme,
    AuthCredentials,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum Deliveries {
    Table,
    PushConfigId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: on SQLite the check is changed on one connection.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(A2aPushConfigs::Table)
                    .col(id(A2aPushConfigs::Id))
                    .col(reference(A2aPushConfigs::QuestionId))
                    .col(reference(A2aPushConfigs::AgentId))
                    .col(ColumnDef::new(A2aPushConfigs::ConfigId).text().not_null())
                    .col(ColumnDef::new(A2aPushConfigs::Url).text().not_null())
                    .col(ColumnDef::new(A2aPushConfigs::Token).text().null())
                    .col(ColumnDef::new(A2aPushConfigs::AuthScheme).text().null())
                    .col(
                        ColumnDef::new(A2aPushConfigs::AuthCredentials)
                            .text()
                            .null(),
                    )
                    .col(timestamp(A2aPushConfigs::CreatedAt))
                    .col(timestamp(A2aPushConfigs::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        A2aPushConfigs::Table,
                        A2aPushConfigs::QuestionId,
                        Alias::new("agent_questions"),
                    ))
                    .foreign_key(&mut foreign_key(
                        A2aPushConfigs::Table,
                        A2aPushConfigs::AgentId,
                        Alias::new("agents"),
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("a2a_push_configs_one_id_per_task")
                    .table(A2aPushConfigs::Table)
                    .col(A2aPushConfigs::QuestionId)
                    .col(A2aPushConfigs::ConfigId)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .add_column(
                        ColumnDef::new(Deliveries::PushConfigId)
                            .big_integer()
                            .null(),
                    )
                    .to_owned(),
            )
            .await?;
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        events(manager, EVENTS_BEFORE, &after).await
    }

    /// Refused while A2A pushes are stored: askloop before this migration would send them to the
    /// agent's own endpoint.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let pushes = count(
            manager,
            "SELECT COUNT(*) FROM deliveries WHERE push_config_id IS NOT NULL",
        )
        .await?;
        if pushes > 0 {
            return Err(DbErr::Migration(format!(
                "{pushes} A2A push deliveries are stored; askloop before this migration would \
                 send them to the agent's endpoint, so it is not undone while they exist"
            )));
        }
        let after: Vec<&str> = EVENTS_BEFORE.iter().chain(EVENTS_ADDED).copied().collect();
        events(manager, &after, EVENTS_BEFORE).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .drop_column(Deliveries::PushConfigId)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(A2aPushConfigs::Table).to_owned())
            .await
    }
}
