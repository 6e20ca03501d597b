//! Declines speak (docs/contract.md#events-for-the-agent): a niche says how many "not enough
//! context" declines in one round tell the agent (`declines_to_notify`, 3 unless set), and a
//! question remembers the last round the agent was told about (`needs_context_round`), so it is
//! told once per round however many people decline at once.
//!
//! The outbox's event types widen to the events the review loop sends: `needs_context` now, and
//! the verdicts on answers (`expert_answer.verified`, `expert_answer.rejected`).

use crate::prelude::*;

use crate::checks::{one_of, replace_check};

/// The outbox's event types before this migration.
const BEFORE: &[&str] = &[
    "expert_answer.created",
    "agent.research_requested",
    "expert_question.expired",
    "expert_question.dismissed",
];

/// The event types added.
const ADDED: &[&str] = &[
    "expert_question.needs_context",
    "expert_answer.verified",
    "expert_answer.rejected",
];

/// Replace the CHECK on `deliveries.event_type` allowing `from` with one allowing `to`.
async fn change_event_types(
    manager: &SchemaManager<'_>,
    from: &[&str],
    to: &[&str],
) -> Result<(), DbErr> {
    replace_check(
        manager,
        "deliveries",
        "event_type",
        &one_of("event_type", from),
        &one_of("event_type", to),
    )
    .await
}

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000010_declines_speak"
    }
}

#[derive(DeriveIden)]
enum Niches {
    Table,
    DeclinesToNotify,
}

#[derive(DeriveIden)]
enum AgentQuestions {
    Table,
    NeedsContextRound,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: on SQLite the check is changed on one connection.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let after: Vec<&str> = BEFORE.iter().chain(ADDED).copied().collect();
        change_event_types(manager, BEFORE, &after).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Niches::Table)
                    .add_column(
                        ColumnDef::new(Niches::DeclinesToNotify)
                            .big_integer()
                            .not_null()
                            .default(3),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .add_column(ColumnDef::new(AgentQuestions::NeedsContextRound).big_integer())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let after: Vec<&str> = BEFORE.iter().chain(ADDED).copied().collect();
        change_event_types(manager, &after, BEFORE).await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .drop_column(AgentQuestions::NeedsContextRound)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Niches::Table)
                    .drop_column(Niches::DeclinesToNotify)
                    .to_owned(),
            )
            .await
    }
}
