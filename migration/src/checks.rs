//! Changing a column's CHECK constraint on both databases.
//!
//! PostgreSQL names a column's CHECK `<table>_<column>_check` and can drop and add it. SQLite
//! cannot alter a CHECK; its documented procedure edits the table's stored definition instead
//! (inside the migration's transaction, so on one connection) and bumps the schema version so
//! every connection reads the new one. Either way the rows already stored must satisfy the new
//! check: askloop only widens a check, and narrows it back (on `down`) only when no row uses
//! what was added.

use crate::prelude::*;
use crate::sea_orm::{ConnectionTrait, DbBackend, Statement};

/// Replace the CHECK on `table.column` whose condition is `from` with one whose condition is
/// `to` (both written as SQLite stores them, with double-quoted column names).
pub async fn replace_check(
    manager: &SchemaManager<'_>,
    table: &str,
    column: &str,
    from: &str,
    to: &str,
) -> Result<(), DbErr> {
    let db = manager.get_connection();
    match db.get_database_backend() {
        DbBackend::Postgres => {
            let name = format!("{table}_{column}_check");
            db.execute_unprepared(&format!(
                "ALTER TABLE {table} DROP CONSTRAINT {name}, ADD CONSTRAINT {name} CHECK ({to})"
            ))
            .await?;
            Ok(())
        }
        DbBackend::Sqlite => {
            let stored = db
                .query_one_raw(Statement::from_sql_and_values(
                    DbBackend::Sqlite,
                    "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?",
                    [table.into()],
                ))
                .await?
                .ok_or_else(|| DbErr::Migration(format!("no table {table}")))?;
            let sql: String = stored.try_get("", "sql")?;
            let old = format!("CHECK ({from})");
            if sql.matches(&old).count() != 1 {
                return Err(DbErr::Migration(format!(
                    "the check on {table}.{column} is not the expected one: {sql}"
                )));
            }
            let changed = sql.replacen(&old, &format!("CHECK ({to})"), 1);
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
                "UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = ?",
                [changed.into(), table.into()],
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

/// `"column" IN ('a', 'b')`, as both databases are given it.
pub fn one_of(column: &str, values: &[&str]) -> String {
    let listed = values
        .iter()
        .map(|v| format!("'{v}'"))
        .collect::<Vec<_>>()
        .join(", ");
    format!("\"{column}\" IN ({listed})")
}

/// The number `sql` (a `SELECT COUNT(*) …`) counts: how many rows stand in a down migration's way.
pub async fn count(manager: &SchemaManager<'_>, sql: &str) -> Result<i64, DbErr> {
    Ok(manager
        .get_connection()
        .query_one_raw(Statement::from_string(manager.get_database_backend(), sql))
        .await?
        .map(|row| row.try_get_by_index(0))
        .transpose()?
        .unwrap_or(0))
}
