//! Migrating: the schema brought up to date one process at a time, under the database's lock.

use super::Db;
use super::write::{is_busy, write_options};

use migration::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, TransactionTrait};
use tokio::sync::OwnedMutexGuard;

/// The PostgreSQL advisory lock migrations are run under (any fixed number; advisory locks are
/// per database, so other databases on the server are not held up). `askloop` in ASCII.
const MIGRATION_LOCK: i64 = 0x61_73_6b_6c_6f_6f_70;

/// Bring the schema up to date, one process at a time: any number of instances (and commands)
/// may start together on one database, and each finds the schema either untouched or complete.
///
/// The whole run is one transaction that first takes the database's lock, so a process that
/// dies halfway leaves nothing half done and the next one starts over:
/// - PostgreSQL: `pg_advisory_xact_lock`, held by the transaction's one connection until it
///   commits; the others wait in the database for their turn, then find nothing left to do.
/// - SQLite: `BEGIN IMMEDIATE` on the writer's connection, the file's write lock, which
///   serialises every process (and every pool) on that file; one that waits longer than the
///   busy timeout tries again. It takes this process's turn to write first.
pub async fn migrate(db: &Db) -> Result<(), DbErr> {
    let (txn, _turn) = begin_migrating(db).await?;
    Migrator::up(&txn, None).await?;
    txn.commit().await
}

/// Undo the newest `steps` migrations exactly as [`migrate`] applies them: in one transaction
/// on one connection, under the database's lock. For the suite's migration tests; askloop
/// itself never goes down. Spread over a pool instead, a statement could be prepared on a
/// connection that has not yet read the schema another one just changed (SQLite then answers
/// that an index dropped a moment ago "already exists").
#[cfg(feature = "test-hooks")]
pub async fn migrate_down(db: &Db, steps: u32) -> Result<(), DbErr> {
    let (txn, _turn) = begin_migrating(db).await?;
    Migrator::down(&txn, Some(steps)).await?;
    txn.commit().await
}

/// The transaction migrations run in, holding the database's lock (see [`migrate`]), and on
/// SQLite this process's turn to write, to be held until it ends.
#[expect(
    clippy::disallowed_methods,
    reason = "migrations run in their own transaction, under the database's lock"
)]
async fn begin_migrating(
    db: &Db,
) -> Result<(DatabaseTransaction, Option<OwnedMutexGuard<()>>), DbErr> {
    match db.get_database_backend() {
        DbBackend::Sqlite => {
            let turn = db.writer_turn().lock_owned().await;
            loop {
                match db.writes.begin_with_options(write_options(true)).await {
                    Ok(txn) => return Ok((txn, Some(turn))),
                    Err(err) if is_busy(&err) => {
                        tracing::info!("another process holds the database; waiting to migrate");
                    }
                    Err(err) => return Err(err),
                }
            }
        }
        _ => {
            let txn = db.writes.begin_with_options(write_options(false)).await?;
            txn.execute_unprepared(&format!("SELECT pg_advisory_xact_lock({MIGRATION_LOCK})"))
                .await?;
            Ok((txn, None))
        }
    }
}
