//! Agent tokens (docs/contract.md#mcp): the bearer tokens a registered agent reaches the MCP
//! server at `/mcp` with. A token belongs to one agent, is distinct from its signing secrets, is
//! stored only as its SHA-256 (the token itself is shown once), and is revoked by setting
//! `revoked_at`; a revoked token never works again. An agent may hold several live tokens at
//! once, so a new one can be rolled out before the old one is revoked.

use crate::prelude::*;

use crate::columns::{foreign_key, id, reference, timestamp, timestamp_null};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000014_agent_tokens"
    }
}

#[derive(DeriveIden, Clone)]
enum AgentTokens {
    Table,
    Id,
    AgentId,
    Prefix,
    TokenHash,
    CreatedAt,
    RevokedAt,
}

#[derive(DeriveIden, Clone)]
enum Agents {
    Table,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AgentTokens::Table)
                    .col(id(AgentTokens::Id))
                    .col(reference(AgentTokens::AgentId))
                    // The first characters of the token, to recognise it in a list or a log.
                    .col(ColumnDef::new(AgentTokens::Prefix).string().not_null())
                    // SHA-256 of the token, hex: what a bearer is looked up by.
                    .col(
                        ColumnDef::new(AgentTokens::TokenHash)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(timestamp(AgentTokens::CreatedAt))
                    .col(timestamp_null(AgentTokens::RevokedAt))
                    .foreign_key(&mut foreign_key(
                        AgentTokens::Table,
                        AgentTokens::AgentId,
                        Agents::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("agent_tokens_agent_idx")
                    .table(AgentTokens::Table)
                    .col(AgentTokens::AgentId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("agent_tokens_agent_idx")
                    .table(AgentTokens::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(AgentTokens::Table).to_owned())
            .await
    }
}
