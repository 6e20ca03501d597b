//! The outbox: every event for the agent is a delivery row written in the same transaction as
//! the change that causes it, and every attempt to send it is recorded.

use crate::prelude::*;

use crate::columns::{foreign_key, id, non_negative, one_of, reference, timestamp, timestamp_null};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000006_deliveries"
    }
}

#[derive(DeriveIden, Clone)]
enum Deliveries {
    Table,
    Id,
    /// The envelope id: the agent dedupes on it, so it never changes between attempts.
    EnvelopeId,
    EventType,
    NicheId,
    QuestionId,
    /// The envelope exactly as it is POSTed (signed afresh at each attempt).
    Body,
    Status,
    Attempts,
    NextAttemptAt,
    /// Who holds the row while sending it, and until when; a holder that dies lets go when
    /// the lease runs out and the row is claimed (and sent) again.
    ClaimToken,
    ClaimedUntil,
    LastStatusCode,
    LastError,
    /// Retries stop about three days after this (reset by a redelivery).
    RetryFrom,
    DeliveredAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum DeliveryAttempts {
    Table,
    Id,
    DeliveryId,
    AttemptedAt,
    StatusCode,
    DurationMs,
    Error,
    Outcome,
}

#[derive(DeriveIden, Clone)]
enum Niches {
    Table,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Deliveries::Table)
                    .col(id(Deliveries::Id))
                    .col(
                        ColumnDef::new(Deliveries::EnvelopeId)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(one_of(
                        Deliveries::EventType,
                        &[
                            "expert_answer.created",
                            "agent.research_requested",
                            "expert_question.expired",
                            "expert_question.dismissed",
                        ],
                    ))
                    .col(reference(Deliveries::NicheId))
                    .col(ColumnDef::new(Deliveries::QuestionId).big_integer().null())
                    .col(ColumnDef::new(Deliveries::Body).text().not_null())
                    .col(one_of(
                        Deliveries::Status,
                        &["pending", "delivered", "exhausted"],
                    ))
                    .col(non_negative(Deliveries::Attempts))
                    .col(timestamp(Deliveries::NextAttemptAt))
                    .col(ColumnDef::new(Deliveries::ClaimToken).string().null())
                    .col(timestamp_null(Deliveries::ClaimedUntil))
                    .col(ColumnDef::new(Deliveries::LastStatusCode).integer().null())
                    .col(ColumnDef::new(Deliveries::LastError).text().null())
                    .col(timestamp(Deliveries::RetryFrom))
                    .col(timestamp_null(Deliveries::DeliveredAt))
                    .col(timestamp(Deliveries::CreatedAt))
                    .col(timestamp(Deliveries::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        Deliveries::Table,
                        Deliveries::NicheId,
                        Niches::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        // What the worker looks for: pending rows by when they are due.
        manager
            .create_index(
                Index::create()
                    .name("deliveries_due_idx")
                    .table(Deliveries::Table)
                    .col(Deliveries::Status)
                    .col(Deliveries::NextAttemptAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DeliveryAttempts::Table)
                    .col(id(DeliveryAttempts::Id))
                    .col(reference(DeliveryAttempts::DeliveryId))
                    .col(timestamp(DeliveryAttempts::AttemptedAt))
                    .col(
                        ColumnDef::new(DeliveryAttempts::StatusCode)
                            .integer()
                            .null(),
                    )
                    .col(non_negative(DeliveryAttempts::DurationMs))
                    .col(ColumnDef::new(DeliveryAttempts::Error).text().null())
                    .col(one_of(
                        DeliveryAttempts::Outcome,
                        &["delivered", "retry", "exhausted"],
                    ))
                    .foreign_key(&mut foreign_key(
                        DeliveryAttempts::Table,
                        DeliveryAttempts::DeliveryId,
                        Deliveries::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("delivery_attempts_delivery_idx")
                    .table(DeliveryAttempts::Table)
                    .col(DeliveryAttempts::DeliveryId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(DeliveryAttempts::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Deliveries::Table).to_owned())
            .await
    }
}
