//! PostgreSQL's knowledge index takes each entry's words into the index itself as the entry is
//! written, instead of into the GIN index's pending list (`fastupdate = off`).
//!
//! With the pending list (GIN's default), new entries' words wait, unsorted, until a vacuum or
//! 4 MB of them move them into the index, and every search reads the whole list meanwhile: after
//! entries written in a burst a one-word search read hundreds of pending pages
//! (docs/benchmarks.md#knowledge-search), and the planner, seeing the cost, scanned the table
//! instead. Knowledge is written
//! once per verified answer and searched on every intake that asks for similar entries, so the
//! cost belongs on the write. What is pending when the migration runs is moved into the index.
//! SQLite's FTS5 index has no such list; nothing changes there.

use crate::prelude::*;
use crate::sea_orm::DbBackend;

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261204_000022_search_without_pending_list"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        db.execute_unprepared("ALTER INDEX knowledge_entries_search SET (fastupdate = off)")
            .await?;
        db.execute_unprepared("SELECT gin_clean_pending_list('knowledge_entries_search')")
            .await?;
        Ok(())
    }

    /// The pending list again (GIN's default).
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        manager
            .get_connection()
            .execute_unprepared("ALTER INDEX knowledge_entries_search RESET (fastupdate)")
            .await?;
        Ok(())
    }
}
