//! The money side: the budget ledger of bounties (reserve, charge, release), revenue events and
//! their allocations, and the anomaly-signal log. Every table here is append-only except an
//! allocation's status, which moves forward as it is paid out.

use crate::prelude::*;

use crate::columns::{basis_points, foreign_key, id, non_negative, one_of, reference, timestamp};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000007_money"
    }
}

#[derive(DeriveIden, Clone)]
enum BudgetEntries {
    Table,
    Id,
    NicheId,
    QuestionId,
    Kind,
    AmountMinor,
    /// The budget month the entry was made in (`YYYY-MM`, UTC): a charge counts in its month.
    Month,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum RevenueEvents {
    Table,
    Id,
    NicheId,
    ExternalId,
    SourceType,
    GrossMinor,
    ProcessingMinor,
    NetworkMinor,
    InfraMinor,
    RefundMinor,
    NetMinor,
    Currency,
    QuestionId,
    CreatedAt,
}

#[derive(DeriveIden, Clone)]
enum Allocations {
    Table,
    Id,
    RevenueEventId,
    NicheId,
    /// The person; null for the platform's part.
    UserId,
    ShareBps,
    AmountMinor,
    Status,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum AnomalySignals {
    Table,
    Id,
    SignalId,
    SubjectType,
    SubjectId,
    Kind,
    Severity,
    Finding,
    ReceivedAt,
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
                    .table(BudgetEntries::Table)
                    .col(id(BudgetEntries::Id))
                    .col(reference(BudgetEntries::NicheId))
                    .col(reference(BudgetEntries::QuestionId))
                    .col(one_of(
                        BudgetEntries::Kind,
                        &["reserve", "charge", "release"],
                    ))
                    .col(non_negative(BudgetEntries::AmountMinor))
                    .col(ColumnDef::new(BudgetEntries::Month).string().not_null())
                    .col(timestamp(BudgetEntries::CreatedAt))
                    .foreign_key(&mut foreign_key(
                        BudgetEntries::Table,
                        BudgetEntries::NicheId,
                        Niches::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        // A question is reserved, charged and released at most once each.
        manager
            .create_index(
                Index::create()
                    .name("budget_entries_question_kind_key")
                    .table(BudgetEntries::Table)
                    .col(BudgetEntries::QuestionId)
                    .col(BudgetEntries::Kind)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("budget_entries_month_idx")
                    .table(BudgetEntries::Table)
                    .col(BudgetEntries::NicheId)
                    .col(BudgetEntries::Month)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(RevenueEvents::Table)
                    .col(id(RevenueEvents::Id))
                    .col(reference(RevenueEvents::NicheId))
                    .col(
                        ColumnDef::new(RevenueEvents::ExternalId)
                            .string()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(RevenueEvents::SourceType)
                            .string()
                            .not_null(),
                    )
                    .col(non_negative(RevenueEvents::GrossMinor))
                    .col(non_negative(RevenueEvents::ProcessingMinor))
                    .col(non_negative(RevenueEvents::NetworkMinor))
                    .col(non_negative(RevenueEvents::InfraMinor))
                    .col(non_negative(RevenueEvents::RefundMinor))
                    .col(non_negative(RevenueEvents::NetMinor))
                    .col(
                        ColumnDef::new(RevenueEvents::Currency)
                            .string_len(3)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(RevenueEvents::QuestionId)
                            .big_integer()
                            .null(),
                    )
                    .col(timestamp(RevenueEvents::CreatedAt))
                    .foreign_key(&mut foreign_key(
                        RevenueEvents::Table,
                        RevenueEvents::NicheId,
                        Niches::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        // An externalId books once.
        manager
            .create_index(
                Index::create()
                    .name("revenue_events_external_key")
                    .table(RevenueEvents::Table)
                    .col(RevenueEvents::ExternalId)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Allocations::Table)
                    .col(id(Allocations::Id))
                    .col(reference(Allocations::RevenueEventId))
                    .col(reference(Allocations::NicheId))
                    .col(ColumnDef::new(Allocations::UserId).big_integer().null())
                    .col(basis_points(Allocations::ShareBps, 10_000))
                    .col(non_negative(Allocations::AmountMinor))
                    .col(one_of(
                        Allocations::Status,
                        &["accrued", "scheduled", "paid", "reversed"],
                    ))
                    .col(timestamp(Allocations::CreatedAt))
                    .col(timestamp(Allocations::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        Allocations::Table,
                        Allocations::RevenueEventId,
                        RevenueEvents::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("allocations_user_idx")
                    .table(Allocations::Table)
                    .col(Allocations::UserId)
                    .col(Allocations::Status)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(AnomalySignals::Table)
                    .col(id(AnomalySignals::Id))
                    .col(
                        ColumnDef::new(AnomalySignals::SignalId)
                            .string()
                            .not_null()
                            .unique_key(),
                    )
                    .col(one_of(
                        AnomalySignals::SubjectType,
                        &["question", "answer", "operator", "agent"],
                    ))
                    .col(
                        ColumnDef::new(AnomalySignals::SubjectId)
                            .string()
                            .not_null(),
                    )
                    .col(ColumnDef::new(AnomalySignals::Kind).string().not_null())
                    .col(one_of(
                        AnomalySignals::Severity,
                        &["low", "medium", "high", "critical"],
                    ))
                    .col(ColumnDef::new(AnomalySignals::Finding).text().not_null())
                    .col(timestamp(AnomalySignals::ReceivedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            AnomalySignals::Table.into_iden(),
            Allocations::Table.into_iden(),
            RevenueEvents::Table.into_iden(),
            BudgetEntries::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
