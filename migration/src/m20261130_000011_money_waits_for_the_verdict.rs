//! Money waits for the verdict (docs/contract.md#held-money):
//!
//! - an allocation may be `held` (the bounty of an answer still in review: shown, not owed);
//! - a `clawback` allocation books the negative of a paid (or in-flight) allocation whose answer
//!   was reversed, naming it in `claws_back` (at most one clawback per allocation); only a
//!   clawback may be negative;
//! - a budget entry may be a `charge_reversal` (the agent's charge given back when its answer is
//!   rejected), and a question reopened after a rejection is reserved and charged again, so a
//!   question may now have several entries of one kind: the once-per-kind key becomes an index;
//! - for the same reason a question may have one winning answer per round (a reopened question
//!   advances its round) instead of one in all.

use crate::prelude::*;

use crate::checks::{one_of, replace_check};

/// Replace the unique index that keeps one `answered` row per `columns`.
async fn one_winner_per(manager: &SchemaManager<'_>, columns: &str) -> Result<(), DbErr> {
    let db = manager.get_connection();
    db.execute_unprepared("DROP INDEX agent_answers_one_winner_key")
        .await?;
    db.execute_unprepared(&format!(
        "CREATE UNIQUE INDEX agent_answers_one_winner_key \
         ON agent_answers ({columns}) WHERE kind = 'answered'"
    ))
    .await?;
    Ok(())
}

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000011_money_waits_for_the_verdict"
    }
}

const ALLOCATION_STATUSES: &[&str] = &["accrued", "scheduled", "paid", "reversed"];
const ALLOCATION_STATUSES_NOW: &[&str] = &["accrued", "scheduled", "paid", "reversed", "held"];
const ENTRY_KINDS: &[&str] = &["reserve", "charge", "release"];
const ENTRY_KINDS_NOW: &[&str] = &["reserve", "charge", "release", "charge_reversal"];
const AMOUNT: &str = "\"amount_minor\" >= 0";
const AMOUNT_NOW: &str = "\"amount_minor\" >= 0 OR \"claws_back\" IS NOT NULL";

#[derive(DeriveIden)]
enum Allocations {
    Table,
    ClawsBack,
}

#[derive(DeriveIden)]
enum BudgetEntries {
    Table,
    QuestionId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    /// One transaction on every backend: on SQLite the checks are changed on one connection.
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Allocations::Table)
                    .add_column(ColumnDef::new(Allocations::ClawsBack).big_integer().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("allocations_claws_back_key")
                    .table(Allocations::Table)
                    .col(Allocations::ClawsBack)
                    .unique()
                    .to_owned(),
            )
            .await?;
        replace_check(
            manager,
            "allocations",
            "status",
            &one_of("status", ALLOCATION_STATUSES),
            &one_of("status", ALLOCATION_STATUSES_NOW),
        )
        .await?;
        replace_check(manager, "allocations", "amount_minor", AMOUNT, AMOUNT_NOW).await?;
        replace_check(
            manager,
            "budget_entries",
            "kind",
            &one_of("kind", ENTRY_KINDS),
            &one_of("kind", ENTRY_KINDS_NOW),
        )
        .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("budget_entries_question_kind_key")
                    .table(BudgetEntries::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("budget_entries_question_idx")
                    .table(BudgetEntries::Table)
                    .col(BudgetEntries::QuestionId)
                    .to_owned(),
            )
            .await?;
        one_winner_per(manager, "question_id, research_round").await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        one_winner_per(manager, "question_id").await?;
        manager
            .drop_index(
                Index::drop()
                    .name("budget_entries_question_idx")
                    .table(BudgetEntries::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("budget_entries_question_kind_key")
                    .table(BudgetEntries::Table)
                    .col(BudgetEntries::QuestionId)
                    .col(Alias::new("kind"))
                    .unique()
                    .to_owned(),
            )
            .await?;
        replace_check(
            manager,
            "budget_entries",
            "kind",
            &one_of("kind", ENTRY_KINDS_NOW),
            &one_of("kind", ENTRY_KINDS),
        )
        .await?;
        replace_check(manager, "allocations", "amount_minor", AMOUNT_NOW, AMOUNT).await?;
        replace_check(
            manager,
            "allocations",
            "status",
            &one_of("status", ALLOCATION_STATUSES_NOW),
            &one_of("status", ALLOCATION_STATUSES),
        )
        .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("allocations_claws_back_key")
                    .table(Allocations::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Allocations::Table)
                    .drop_column(Allocations::ClawsBack)
                    .to_owned(),
            )
            .await
    }
}
