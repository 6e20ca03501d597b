//! Payouts: where a person wants to be paid, and payouts that gather their owed allocations.
//! An allocation points at the one payout it is in (none when owed); a failed payout lets its
//! allocations go, owed again.

use crate::prelude::*;

use crate::columns::{foreign_key, id, non_negative, one_of, reference, timestamp, timestamp_null};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261129_000008_payouts"
    }
}

#[derive(DeriveIden, Clone)]
enum PayoutAccounts {
    Table,
    Id,
    UserId,
    Address,
    VerifiedAt,
    VerifiedBy,
    UpdatedAt,
}

#[derive(DeriveIden, Clone)]
enum Payouts {
    Table,
    Id,
    UserId,
    AmountMinor,
    Currency,
    Status,
    Address,
    ExternalReference,
    FailureReason,
    CreatedBy,
    CreatedAt,
    SettledAt,
}

#[derive(DeriveIden, Clone)]
enum Allocations {
    Table,
    PayoutId,
}

#[derive(DeriveIden, Clone)]
enum Users {
    Table,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PayoutAccounts::Table)
                    .col(id(PayoutAccounts::Id))
                    .col(reference(PayoutAccounts::UserId).unique_key().take())
                    .col(ColumnDef::new(PayoutAccounts::Address).string().not_null())
                    .col(timestamp_null(PayoutAccounts::VerifiedAt))
                    .col(
                        ColumnDef::new(PayoutAccounts::VerifiedBy)
                            .big_integer()
                            .null(),
                    )
                    .col(timestamp(PayoutAccounts::UpdatedAt))
                    .foreign_key(&mut foreign_key(
                        PayoutAccounts::Table,
                        PayoutAccounts::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Payouts::Table)
                    .col(id(Payouts::Id))
                    .col(reference(Payouts::UserId))
                    .col(non_negative(Payouts::AmountMinor))
                    .col(ColumnDef::new(Payouts::Currency).string_len(3).not_null())
                    .col(one_of(Payouts::Status, &["scheduled", "paid", "failed"]))
                    .col(ColumnDef::new(Payouts::Address).string().not_null())
                    .col(
                        ColumnDef::new(Payouts::ExternalReference)
                            .string()
                            .null()
                            .unique_key(),
                    )
                    .col(ColumnDef::new(Payouts::FailureReason).text().null())
                    .col(reference(Payouts::CreatedBy))
                    .col(timestamp(Payouts::CreatedAt))
                    .col(timestamp_null(Payouts::SettledAt))
                    .foreign_key(&mut foreign_key(
                        Payouts::Table,
                        Payouts::UserId,
                        Users::Table,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Allocations::Table)
                    .add_column(ColumnDef::new(Allocations::PayoutId).big_integer().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("allocations_payout_idx")
                    .table(Allocations::Table)
                    .col(Allocations::PayoutId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("allocations_payout_idx")
                    .table(Allocations::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Allocations::Table)
                    .drop_column(Allocations::PayoutId)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(Payouts::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(PayoutAccounts::Table).to_owned())
            .await
    }
}
