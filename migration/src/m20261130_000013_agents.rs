//! The agent registry (docs/contract.md#agents): agents with their own slug, status, signing
//! secrets (current, and previous until a retirement time), webhook endpoint (URL, scheme, the
//! event types wanted) and the niches each may ask in. A question remembers the registered agent
//! that asked it (`registered_agent_id`), and a delivery the agent whose endpoint it goes to
//! (`agent_id`); NULL in both means the built-in default agent (`CHOVY_SIGNING_SECRET` and
//! `CHOVY_WEBHOOK_URL`), so every row written before this migration keeps its meaning.
//!
//! The two added columns carry an index but no foreign key: SQLite cannot add one to an existing
//! table, and agents are disabled, never deleted.

use crate::prelude::*;

use crate::columns::{foreign_key, id, one_of, reference, timestamp, timestamp_null};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000013_agents"
    }
}

#[derive(DeriveIden, Clone)]
enum Agents {
    Table,
    Id,
    Slug,
    Name,
    Status,
    SecretCurrent,
    SecretPrevious,
    PreviousRetiresAt,
    WebhookUrl,
    Scheme,
    EventTypes,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum AgentNiches {
    Table,
    AgentId,
    NicheId,
}

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
}

#[derive(DeriveIden, Clone)]
enum AgentQuestions {
    Table,
    RegisteredAgentId,
}

#[derive(DeriveIden, Clone)]
enum Deliveries {
    Table,
    AgentId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Agents::Table)
                    .col(id(Agents::Id))
                    .col(
                        ColumnDef::new(Agents::Slug)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(Agents::Name).string().not_null())
                    .col(one_of(Agents::Status, &["active", "disabled"]))
                    // A secret as stored: sealed with ASKLOOP_DATA_KEY, or as given without one.
                    .col(ColumnDef::new(Agents::SecretCurrent).string().not_null())
                    .col(ColumnDef::new(Agents::SecretPrevious).string().null())
                    .col(timestamp_null(Agents::PreviousRetiresAt))
                    .col(ColumnDef::new(Agents::WebhookUrl).string().null())
                    .col(one_of(Agents::Scheme, &["chovy", "standard"]))
                    // A JSON list of event type names; empty means every event.
                    .col(ColumnDef::new(Agents::EventTypes).json().not_null())
                    .col(timestamp(Agents::CreatedAt))
                    .col(timestamp(Agents::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AgentNiches::Table)
                    .col(reference(AgentNiches::AgentId))
                    .col(reference(AgentNiches::NicheId))
                    .primary_key(
                        Index::create()
                            .col(AgentNiches::AgentId)
                            .col(AgentNiches::NicheId),
                    )
                    .foreign_key(&mut foreign_key(
                        AgentNiches::Table,
                        AgentNiches::AgentId,
                        Agents::Table,
                    ))
                    .foreign_key(&mut foreign_key(
                        AgentNiches::Table,
                        AgentNiches::NicheId,
                        Niches::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .add_column(ColumnDef::new(AgentQuestions::RegisteredAgentId).big_integer())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("agent_questions_registered_agent_idx")
                    .table(AgentQuestions::Table)
                    .col(AgentQuestions::RegisteredAgentId)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .add_column(ColumnDef::new(Deliveries::AgentId).big_integer())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("deliveries_agent_idx")
                    .table(Deliveries::Table)
                    .col(Deliveries::AgentId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("deliveries_agent_idx")
                    .table(Deliveries::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .drop_column(Deliveries::AgentId)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("agent_questions_registered_agent_idx")
                    .table(AgentQuestions::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .drop_column(AgentQuestions::RegisteredAgentId)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(AgentNiches::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Agents::Table).to_owned())
            .await
    }
}
