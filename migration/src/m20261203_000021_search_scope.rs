//! SQLite's knowledge index knows each entry's niche and status (docs/architecture.md#knowledge),
//! so a search reads only its niche's entries of the status it asks for, newest first, and stops
//! after the newest matches instead of ranking every entry that holds one of its words.
//!
//! The FTS5 table's rowid becomes the entry's niche and status above its id's 36 bits
//! (`domain::knowledge::search_rowid`: `((niche_id * 4 + status) << 36) | id`, status 0 current,
//! 1 superseded, 2 retracted), so each niche's entries of one status are one range of rowids; the
//! table is refilled from `knowledge_entries`. PostgreSQL's index is unchanged: its vector is
//! the row's own column, and the niche and status are the row's.

use crate::prelude::*;
use crate::sea_orm::{ConnectionTrait, DbBackend};

pub struct Migration;

impl MigrationName for Migration {
    fn name(&self) -> &str {
        "m20261203_000021_search_scope"
    }
}

/// Refill SQLite's index, at the rowids that name each entry's niche and status or (`scoped`
/// false, as before this migration) at the entries' ids.
async fn sqlite_index<C: ConnectionTrait>(db: &C, scoped: bool) -> Result<(), DbErr> {
    let rowid = if scoped {
        "((niche_id * 4 + CASE status WHEN 'current' THEN 0 WHEN 'superseded' THEN 1 ELSE 2 END) \
          * 68719476736) | id"
    } else {
        "id"
    };
    db.execute_unprepared("DELETE FROM knowledge_search")
        .await?;
    db.execute_unprepared(&format!(
        "INSERT INTO knowledge_search (rowid, title, question, answer) \
         SELECT {rowid}, title, question, \
           trim(coalesce(option_label, '') || ' ' || coalesce(answer, '')) \
         FROM knowledge_entries"
    ))
    .await?;
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match manager.get_database_backend() {
            DbBackend::Sqlite => sqlite_index(db, true).await,
            _ => Ok(()),
        }
    }

    /// SQLite's index at the entries' ids again; nothing is lost (it is refilled from the entries).
    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        match manager.get_database_backend() {
            DbBackend::Sqlite => sqlite_index(db, false).await,
            _ => Ok(()),
        }
    }
}
