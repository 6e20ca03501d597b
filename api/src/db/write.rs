//! Writing: the one kind of write transaction, which on SQLite holds the process's turn to write
//! (kept by the database's [`Db`](super::Db)).

use super::fixed_limits;

use sea_orm::{
    ConnectionTrait, DatabaseTransaction, DbBackend, DbErr, ExecResult, QueryResult, RuntimeErr,
    SqliteTransactionMode, Statement, TransactionOptions,
};
use tokio::sync::OwnedMutexGuard;

/// How a write transaction begins: `IMMEDIATE` on SQLite (where `sqlite` says this is SQLite
/// and the process's turn is held); a bare `BEGIN` on PostgreSQL, whose writers' connections
/// are read-write already.
pub(super) fn write_options(sqlite: bool) -> TransactionOptions {
    if sqlite {
        TransactionOptions {
            sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
            ..Default::default()
        }
    } else {
        TransactionOptions::default()
    }
}

/// Whether `err` is SQLite's "database is locked" (`SQLITE_BUSY` and its extended codes): the
/// busy timeout ran out while another connection held the write lock.
pub(super) fn is_busy(err: &DbErr) -> bool {
    let (DbErr::Conn(runtime) | DbErr::Exec(runtime) | DbErr::Query(runtime)) = err else {
        return false;
    };
    let RuntimeErr::SqlxError(sqlx_err) = runtime else {
        return false;
    };
    sqlx_err
        .as_database_error()
        .and_then(|db_err| db_err.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == 5)
}

/// A transaction that will write, which only [`Db::begin_write`] makes: a connection (reads and
/// writes inside the transaction) that, on SQLite, also holds this process's turn to write and
/// began `IMMEDIATE`. Every helper that writes takes one.
pub struct WriteTxn {
    pub(super) txn: DatabaseTransaction,
    pub(super) _turn: Option<OwnedMutexGuard<()>>,
}

impl std::fmt::Debug for WriteTxn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteTxn")
            .field("gated", &self._turn.is_some())
            .finish()
    }
}

impl WriteTxn {
    /// Commit, then give the turn to the next writer.
    pub async fn commit(self) -> Result<(), DbErr> {
        self.txn.commit().await
    }

    /// Roll back, then give the turn to the next writer.
    pub async fn rollback(self) -> Result<(), DbErr> {
        self.txn.rollback().await
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for WriteTxn {
    fn get_database_backend(&self) -> DbBackend {
        self.txn.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.txn.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.txn.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.txn.query_one_raw(fixed_limits(stmt)).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.txn.query_all_raw(fixed_limits(stmt)).await
    }

    fn support_returning(&self) -> bool {
        self.txn.support_returning()
    }
}
