//! Declines speak (docs/contract.md#events-for-the-agent): a niche says how many "not enough
//! context" declines in one round tell the agent (`declines_to_notify`, 3 unless set), and a
//! question remembers the last round the agent was told about (`needs_context_round`), so it is
//! told once per round however many people decline at once.
//!
//! The outbox's event types widen to the events the review loop sends: `needs_context` now, and
//! the verdicts on answers (`expert_answer.verified`, `expert_answer.rejected`).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend, Statement};

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

fn quoted(types: &[&str]) -> String {
    types
        .iter()
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Replace the CHECK on `deliveries.event_type` allowing `from` with one allowing `to`.
async fn change_event_types(
    manager: &SchemaManager<'_>,
    from: &[&str],
    to: &[&str],
) -> Result<(), DbErr> {
    let db = manager.get_connection();
    match db.get_database_backend() {
        DbBackend::Postgres => {
            db.execute_unprepared(&format!(
                "ALTER TABLE deliveries DROP CONSTRAINT deliveries_event_type_check, \
                 ADD CONSTRAINT deliveries_event_type_check CHECK (event_type IN ({}))",
                quoted(to)
            ))
            .await?;
            Ok(())
        }
        DbBackend::Sqlite => {
            // SQLite cannot alter a CHECK. Its documented procedure edits the table's stored
            // definition instead (inside this migration's transaction, so on one connection)
            // and bumps the schema version so every connection reads the new one. The rows
            // already satisfy the new check: it only widens, and narrowing back happens only
            // when no row uses the added types.
            let table = db
                .query_one_raw(Statement::from_string(
                    DbBackend::Sqlite,
                    "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'deliveries'",
                ))
                .await?
                .ok_or_else(|| DbErr::Migration("no deliveries table".into()))?;
            let sql: String = table.try_get("", "sql")?;
            let old_list = format!("\"event_type\" IN ({})", quoted(from));
            if sql.matches(&old_list).count() != 1 {
                return Err(DbErr::Migration(format!(
                    "the event type check of deliveries is not the expected one: {sql}"
                )));
            }
            let changed =
                sql.replacen(&old_list, &format!("\"event_type\" IN ({})", quoted(to)), 1);
            let version = db
                .query_one_raw(Statement::from_string(
                    DbBackend::Sqlite,
                    "PRAGMA schema_version",
                ))
                .await?
                .ok_or_else(|| DbErr::Migration("no schema version".into()))?;
            let version: i64 = version.try_get_by_index(0)?;
            db.execute_unprepared("PRAGMA writable_schema = ON").await?;
            db.execute_raw(Statement::from_sql_and_values(
                DbBackend::Sqlite,
                "UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = 'deliveries'",
                [changed.into()],
            ))
            .await?;
            db.execute_unprepared(&format!("PRAGMA schema_version = {}", version + 1))
                .await?;
            db.execute_unprepared("PRAGMA writable_schema = OFF")
                .await?;
            Ok(())
        }
        other => Err(DbErr::Migration(format!("{other:?} is not supported"))),
    }
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
