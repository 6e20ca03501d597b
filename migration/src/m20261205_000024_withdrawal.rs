//! An agent withdraws a question it no longer needs (docs/contract.md#withdrawal).
//!
//! - `agent_questions.withdrawn_at`: when its agent withdrew it. A withdrawn question is
//!   `dismissed` like one a person closed; this says who closed it, which the task protocols
//!   tell apart (MCP `cancelled`, A2A `CANCELED`, against a person's `REJECTED`).

use crate::prelude::*;

use crate::columns::timestamp_null;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261205_000024_withdrawal"
    }
}

#[derive(DeriveIden, Clone)]
enum AgentQuestions {
    Table,
    WithdrawnAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .add_column(timestamp_null(AgentQuestions::WithdrawnAt))
                    .to_owned(),
            )
            .await
    }

    /// A withdrawn question stays dismissed; only who dismissed it is forgotten.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AgentQuestions::Table)
                    .drop_column(AgentQuestions::WithdrawnAt)
                    .to_owned(),
            )
            .await
    }
}
