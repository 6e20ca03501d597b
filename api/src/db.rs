//! Connecting to the database (SQLite by default, PostgreSQL to grow) and starting transactions
//! that behave the same on both.

use std::time::Duration;

use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, Database, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    SqliteTransactionMode, TransactionOptions, TransactionTrait,
};

/// Open a pool for `url`. SQLite files are created on first use and run in WAL mode, so readers
/// never wait for the writer.
pub async fn connect(url: &str) -> Result<DatabaseConnection, DbErr> {
    let mut options = ConnectOptions::new(url.to_owned());
    options
        .sqlx_logging(false)
        .acquire_timeout(Duration::from_secs(10));
    if url.starts_with("sqlite:") {
        options
            .max_connections(8)
            .min_connections(1)
            .map_sqlx_sqlite_opts(|opts| {
                opts.create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .foreign_keys(true)
                    .busy_timeout(Duration::from_secs(10))
            });
    } else {
        // Kept open all the time: a burst never waits for a connection to be opened on its
        // request path (tens of milliseconds each, more while several open at once), and one
        // closed (say, cut off mid-query) is opened again in the background.
        options.max_connections(20).min_connections(20);
    }
    Database::connect(options).await
}

/// Begin a transaction that will write.
///
/// On SQLite it starts `IMMEDIATE`, taking the write lock up front: a deferred transaction that
/// reads first and writes later can fail with "database is locked" without waiting, where an
/// immediate one queues behind the busy timeout like any writer. PostgreSQL ignores the mode.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    let mode = match db.get_database_backend() {
        DbBackend::Sqlite => Some(SqliteTransactionMode::Immediate),
        _ => None,
    };
    db.begin_with_options(TransactionOptions {
        sqlite_transaction_mode: mode,
        ..Default::default()
    })
    .await
}
