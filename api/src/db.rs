//! Connecting to the database (SQLite by default, PostgreSQL to grow) with a pool sized for the
//! process, migrating it one process at a time, and the one way to write: [`Db`] is what
//! services receive, and it reads, or begins a [`WriteTxn`] with [`Db::begin_write`] — the only
//! place a transaction starts (`clippy.toml` refuses `begin` and its kin everywhere else). Every
//! helper that writes takes a `&WriteTxn`, so a write cannot start deferred or outside the
//! process's turn to write.

pub mod bulk;
mod connect;
mod dialect;
mod migrate;
mod turns;
mod write;

#[cfg(feature = "test-hooks")]
pub use connect::connect_for_tests;
pub use connect::{
    MIN_POOL, ONE_SHOT_CONNECTIONS, POSTGRES_CONNECTIONS, PoolSize, SQLITE_CONNECTIONS,
    SQLITE_MMAP_BYTES, connect, postgres_writers, serving_connections, serving_writers,
};
pub use dialect::{all_with_fixed_limits, fixed_limits, placeholders, statement};
pub use migrate::migrate;
#[cfg(feature = "test-hooks")]
pub use migrate::migrate_down;
pub use turns::{Turn, Turns};
pub use write::WriteTxn;

use write::write_options;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use sea_orm::{
    ConnectionTrait, DatabaseConnection, DbBackend, DbErr, ExecResult, QueryResult, Statement,
    TransactionTrait,
};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// The database as services see it: reads (it is a [`ConnectionTrait`] for them) and
/// [`Db::begin_write`], nothing else — it has no `begin`.
///
/// On SQLite it holds two pools on one file: the readers, whose connections refuse to write
/// (`PRAGMA query_only = ON`, so a write that slips past the types fails loudly instead of
/// racing the writer), and one connection for the writer, since the process writes one
/// transaction at a time anyway (see [`Db::begin_write`]). On PostgreSQL it holds two pools
/// too, [`postgres_writers`] of the connections for writing and the rest for reading: the
/// readers' connections start every transaction read-only (`default_transaction_read_only =
/// on`), so there too a write that slips past the types fails instead of running outside a
/// write transaction; the writers' start them read-write, so [`Db::begin_write`] sends a bare
/// `BEGIN` (a `BEGIN` followed by `SET TRANSACTION READ WRITE` on a read-only connection would
/// be one more round trip in every write).
///
/// What the process keeps per database beside the pools ([`Db::kept`], the turn to write) is
/// held here too, shared by every clone: one `Db` is connected per database and handed down, so
/// its clones are every pool of the process that writes it, and nothing is kept in a
/// process-wide map.
#[derive(Debug, Clone)]
pub struct Db {
    reads: DatabaseConnection,
    writes: DatabaseConnection,
    kept: Arc<Kept>,
}

/// What a process keeps for one database beside its pools, shared by the clones of its `Db`.
#[derive(Default)]
struct Kept {
    /// The turn to write an SQLite file: its writers queue here (see [`Db::begin_write`]).
    writer: Arc<Mutex<()>>,
    /// One value of each type the layers above keep per database ([`Db::kept`]).
    above: std::sync::Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept").finish_non_exhaustive()
    }
}

impl Db {
    /// A `Db` connected to nothing, for what needs one only to exist (printing the schema).
    pub fn disconnected() -> Self {
        Self::with_pools(DatabaseConnection::default(), DatabaseConnection::default())
    }

    /// A `Db` on these pools, keeping nothing yet.
    fn with_pools(reads: DatabaseConnection, writes: DatabaseConnection) -> Self {
        Self {
            reads,
            writes,
            kept: Arc::default(),
        }
    }

    /// The `T` this process keeps for the database, made with `T::default()` on first use and
    /// shared by every clone of this `Db` (and by the test harness's handle on it): state of
    /// the layers above that belongs to one database, such as the intake queue and the turns to
    /// answer each question (two databases have questions with the same ids).
    pub fn kept<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut above = self
            .kept
            .above
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let kept = above
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()))
            .clone();
        // Stored under its own type's id, so it is always a `T`; a fresh one otherwise.
        kept.downcast::<T>().unwrap_or_else(|_| {
            let fresh = Arc::new(T::default());
            above.insert(TypeId::of::<T>(), fresh.clone());
            fresh
        })
    }

    /// The turn to write the database's file (SQLite), shared by every clone of this `Db`.
    pub(super) fn writer_turn(&self) -> Arc<Mutex<()>> {
        self.kept.writer.clone()
    }

    /// Call `callback` with every statement either pool runs from now on (in transactions too),
    /// with its values: for measuring tools that explain what a path asks the database
    /// (`answer-path`). Clones of this `Db` made after the call share it; askloop itself never
    /// sets one.
    pub fn on_each_statement(
        &mut self,
        callback: impl Fn(&Statement) + Clone + Send + Sync + 'static,
    ) {
        for pool in [&mut self.reads, &mut self.writes] {
            let callback = callback.clone();
            pool.set_metric_callback(move |info| callback(info.statement));
        }
    }

    /// Which store it is.
    pub fn get_database_backend(&self) -> DbBackend {
        self.reads.get_database_backend()
    }

    /// The pool reads go through, for infrastructure that needs the pool itself (the live
    /// feed, PostgreSQL's listener). On SQLite its connections refuse to write.
    pub fn reads(&self) -> &DatabaseConnection {
        &self.reads
    }

    /// Check that the database answers.
    pub async fn ping(&self) -> Result<(), DbErr> {
        self.reads.ping().await
    }

    /// Close its pools (closing one twice, where they are one, is harmless).
    pub async fn close(self) -> Result<(), DbErr> {
        self.reads.close().await?;
        self.writes.close().await
    }

    /// Begin a transaction that will write.
    ///
    /// On SQLite it starts `IMMEDIATE`, taking the write lock up front: a deferred transaction
    /// that reads first and writes later can fail with "database is locked" without waiting.
    /// Before that, it waits for this process's turn to write that file, first come first
    /// served: SQLite has one writer at a time anyway, and writers queued here wait exactly as
    /// long as the one before them takes, where writers left to SQLite's busy handler poll with
    /// sleeps of up to 100 ms (the tail latency of every write under load). Writers in other
    /// processes (the command line) still meet the busy timeout. PostgreSQL has no turn; there
    /// the transaction begins on a connection of the writers' pool, whose transactions are
    /// read-write.
    pub async fn begin_write(&self) -> Result<WriteTxn, DbErr> {
        self.begin_write_checked(|| async { Ok::<(), DbErr>(()) })
            .await
    }

    /// [`Db::begin_write`], but first — once it is this writer's turn, before anything is
    /// begun — run `check`, a read that may find there is nothing left to write (a question
    /// someone else has just answered): its error is returned without a transaction. Writers
    /// that lost a race while they queued then cost one read instead of a transaction that
    /// changes nothing. The check is an early answer only; the transaction's own conditional
    /// writes still decide.
    pub async fn begin_write_checked<E, F, Fut>(&self, check: F) -> Result<WriteTxn, E>
    where
        E: From<DbErr>,
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<(), E>>,
    {
        let turn = match self.get_database_backend() {
            DbBackend::Sqlite => Some(self.writer_turn().lock_owned().await),
            _ => None,
        };
        check().await?;
        Ok(self.begin_in_turn(turn).await?)
    }

    /// [`Db::begin_write`] if nobody is writing in this process now, else `None` at once: for a
    /// write worth skipping rather than waiting for (a credential's time of use). On
    /// PostgreSQL, which has no turn, it always begins.
    pub async fn try_begin_write(&self) -> Result<Option<WriteTxn>, DbErr> {
        let turn = match self.get_database_backend() {
            DbBackend::Sqlite => match self.writer_turn().try_lock_owned() {
                Ok(turn) => Some(turn),
                Err(_) => return Ok(None),
            },
            _ => None,
        };
        self.begin_in_turn(turn).await.map(Some)
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "the one place a write transaction begins"
    )]
    async fn begin_in_turn(&self, turn: Option<OwnedMutexGuard<()>>) -> Result<WriteTxn, DbErr> {
        let txn = self
            .writes
            .begin_with_options(write_options(turn.is_some()))
            .await?;
        Ok(WriteTxn { txn, _turn: turn })
    }
}

#[async_trait::async_trait]
impl ConnectionTrait for Db {
    fn get_database_backend(&self) -> DbBackend {
        self.reads.get_database_backend()
    }

    async fn execute_raw(&self, stmt: Statement) -> Result<ExecResult, DbErr> {
        self.reads.execute_raw(stmt).await
    }

    async fn execute_unprepared(&self, sql: &str) -> Result<ExecResult, DbErr> {
        self.reads.execute_unprepared(sql).await
    }

    async fn query_one_raw(&self, stmt: Statement) -> Result<Option<QueryResult>, DbErr> {
        self.reads.query_one_raw(fixed_limits(stmt)).await
    }

    async fn query_all_raw(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        self.reads.query_all_raw(fixed_limits(stmt)).await
    }

    fn support_returning(&self) -> bool {
        self.reads.support_returning()
    }
}

/// A fresh, migrated SQLite database in a file of its own, for unit tests.
#[cfg(test)]
pub(crate) mod scratch {
    use super::{Db, PoolSize, connect, migrate};

    /// The database's file, removed (with its WAL) when dropped.
    pub(crate) struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            for suffix in ["", "-wal", "-shm"] {
                let mut path = self.0.clone().into_os_string();
                path.push(suffix);
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// A new database, migrated, opened with `size`; keep the [`Scratch`] as long as it is used.
    pub(crate) async fn database(size: PoolSize) -> (Scratch, Db) {
        let path = std::env::temp_dir().join(format!("askloop-unit-{}.db", uuid::Uuid::new_v4()));
        let db = connect(&format!("sqlite://{}?mode=rwc", path.display()), size)
            .await
            .expect("a database");
        migrate(&db).await.expect("migrated");
        (Scratch(path), db)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_that_may_be_skipped_is_skipped_while_another_writes() {
        let (_file, db) = scratch::database(PoolSize::OneShot).await;
        let writing = db.begin_write().await.expect("begun");
        assert!(
            db.try_begin_write().await.expect("no error").is_none(),
            "the turn is taken"
        );
        writing.rollback().await.expect("rolled back");
        let next = db.try_begin_write().await.expect("no error");
        assert!(next.is_some(), "the turn is free again");
    }
}
