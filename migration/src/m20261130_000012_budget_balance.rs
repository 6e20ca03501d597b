//! A niche's budget balance, kept beside its limit (docs/contract.md#budgets-and-bounties): what
//! is still reserved (`budget_reserved_minor`), and what was spent (`budget_spent_minor`) in
//! `budget_month`. Every budget entry moves it in the same transaction, so an intake checks and
//! reserves with one conditional update of the niche's row instead of a lock and two sums over
//! the ledger. The ledger stays the record; the balance is what it sums to, and starts from it.

use crate::prelude::*;
use crate::sea_orm::{ConnectionTrait, Statement};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261130_000012_budget_balance"
    }
}

#[derive(DeriveIden)]
enum Niches {
    Table,
    BudgetMonth,
    BudgetSpentMinor,
    BudgetReservedMinor,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            ColumnDef::new(Niches::BudgetMonth)
                .string()
                .null()
                .to_owned(),
            ColumnDef::new(Niches::BudgetSpentMinor)
                .big_integer()
                .not_null()
                .default(0)
                .to_owned(),
            ColumnDef::new(Niches::BudgetReservedMinor)
                .big_integer()
                .not_null()
                .default(0)
                .to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Niches::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        // Start from the ledger: outstanding reservations over all time, spending in the month
        // the migration runs in.
        let db = manager.get_connection();
        let month = chrono::Utc::now().format("%Y-%m").to_string();
        let reserved = "COALESCE((SELECT SUM(CASE WHEN kind = 'reserve' THEN amount_minor \
                        WHEN kind IN ('charge', 'release') THEN -amount_minor ELSE 0 END) \
                        FROM budget_entries e WHERE e.niche_id = niches.id), 0)";
        let spent = "COALESCE((SELECT SUM(CASE WHEN kind = 'charge' THEN amount_minor \
                     WHEN kind = 'charge_reversal' THEN -amount_minor ELSE 0 END) \
                     FROM budget_entries e WHERE e.niche_id = niches.id AND e.month = $1), 0)";
        let sql = format!(
            "UPDATE niches SET budget_month = $1, budget_reserved_minor = {reserved}, \
             budget_spent_minor = {spent}"
        );
        let backend = db.get_database_backend();
        let sql = if backend == crate::sea_orm::DbBackend::Sqlite {
            sql.replace("$1", "?1")
        } else {
            sql
        };
        db.execute_raw(Statement::from_sql_and_values(backend, sql, [month.into()]))
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [
            Niches::BudgetReservedMinor,
            Niches::BudgetSpentMinor,
            Niches::BudgetMonth,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Niches::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}
