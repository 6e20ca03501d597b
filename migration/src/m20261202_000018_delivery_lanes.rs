//! Deliveries that are not sent (docs/contract.md#events-for-the-agent): a delivery may be
//! `dropped` with the reason why (its operator webhook's owner is no longer an active member of
//! the niche), and a delivery may be tried once only (a webhook's test event), never retried.
//! An index on `webhook_id` serves what reads one webhook's deliveries: the test-send limit's
//! counts, dropping a departed member's pending ones, and the owner's delivery log.

use crate::prelude::*;
use crate::sea_orm::{ConnectionTrait, Statement};

use crate::checks::{one_of as check_one_of, replace_check};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261202_000018_delivery_lanes"
    }
}

/// The statuses before this migration.
const STATUSES_BEFORE: &[&str] = &["pending", "delivered", "exhausted"];

/// The status added.
const STATUSES_ADDED: &[&str] = &["dropped"];

#[derive(DeriveIden, Clone)]
enum Deliveries {
    Table,
    /// Why a `dropped` delivery was not sent.
    DroppedReason,
    /// Tried once; a failed attempt is final (a webhook's test event).
    SingleAttempt,
    WebhookId,
    CreatedAt,
}

const WEBHOOK_INDEX: &str = "deliveries_webhook_idx";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: on SQLite the check is changed on one connection.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let after: Vec<&str> = STATUSES_BEFORE
            .iter()
            .chain(STATUSES_ADDED)
            .copied()
            .collect();
        replace_check(
            manager,
            "deliveries",
            "status",
            &check_one_of("status", STATUSES_BEFORE),
            &check_one_of("status", &after),
        )
        .await?;
        // SQLite adds one column per ALTER TABLE statement.
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .add_column(ColumnDef::new(Deliveries::DroppedReason).text().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .add_column(
                        ColumnDef::new(Deliveries::SingleAttempt)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(WEBHOOK_INDEX)
                    .table(Deliveries::Table)
                    .col(Deliveries::WebhookId)
                    .col(Deliveries::CreatedAt)
                    .to_owned(),
            )
            .await
    }

    /// Refused while any delivery is `dropped`: below this migration no status says "not sent,
    /// and why", and calling such a row pending would send what a departed member must not
    /// receive.
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let dropped: i64 = db
            .query_one_raw(Statement::from_string(
                manager.get_database_backend(),
                "SELECT COUNT(*) FROM deliveries WHERE status = 'dropped'",
            ))
            .await?
            .map(|row| row.try_get_by_index(0))
            .transpose()?
            .unwrap_or(0);
        if dropped > 0 {
            return Err(DbErr::Migration(format!(
                "{dropped} dropped deliveries are stored; askloop before this migration has no \
                 status for them, so it is not undone while they exist"
            )));
        }
        manager
            .drop_index(
                Index::drop()
                    .name(WEBHOOK_INDEX)
                    .table(Deliveries::Table)
                    .to_owned(),
            )
            .await?;
        for column in [Deliveries::SingleAttempt, Deliveries::DroppedReason] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Deliveries::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        let after: Vec<&str> = STATUSES_BEFORE
            .iter()
            .chain(STATUSES_ADDED)
            .copied()
            .collect();
        replace_check(
            manager,
            "deliveries",
            "status",
            &check_one_of("status", &after),
            &check_one_of("status", STATUSES_BEFORE),
        )
        .await
    }
}
