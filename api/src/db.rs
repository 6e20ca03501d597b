//! Connecting to the database (SQLite by default, PostgreSQL to grow) with a pool sized for the
//! process, migrating it one process at a time, and the one way to write: [`Db`] is what
//! services receive, and it reads, or begins a [`WriteTxn`] with [`Db::begin_write`] — the only
//! place a transaction starts (`clippy.toml` refuses `begin` and its kin everywhere else). Every
//! helper that writes takes a `&WriteTxn`, so a write cannot start deferred or outside the
//! process's turn to write.

pub mod bulk;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend,
    DbErr, ExecResult, QueryResult, RuntimeErr, SqliteTransactionMode, Statement,
    TransactionOptions, TransactionTrait,
};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// How many connections a server's pool holds on SQLite when `ASKLOOP_DB_MAX_CONNECTIONS` is
/// unset: readers in WAL mode never wait for the writer, and there is one writer at a time.
pub const SQLITE_CONNECTIONS: u32 = 8;
/// How many connections a server's pool holds on PostgreSQL when `ASKLOOP_DB_MAX_CONNECTIONS`
/// is unset. Each instance keeps this many open, so n instances need n times this (plus
/// [`ONE_SHOT_CONNECTIONS`] per command running beside them) within the server's
/// `max_connections`.
pub const POSTGRES_CONNECTIONS: u32 = 20;
/// The most connections a one-shot command (`askloop user create`, `niche …`, `agent …`) holds:
/// one for its transaction and one for a read beside it.
pub const ONE_SHOT_CONNECTIONS: u32 = 2;
/// How much of an SQLite file each connection maps into memory to read (`PRAGMA mmap_size`).
pub const SQLITE_MMAP_BYTES: u64 = 1 << 30;
/// The fewest connections a pool may be given: a write transaction holds one while a read
/// beside it takes another, so with one the read would wait for the transaction forever.
pub const MIN_POOL: u32 = 2;

/// How a pool is sized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolSize {
    /// A server's pool: `max` connections (`ASKLOOP_DB_MAX_CONNECTIONS`; `None` is the store's
    /// default, [`SQLITE_CONNECTIONS`] or [`POSTGRES_CONNECTIONS`]). On PostgreSQL they are
    /// opened up front and kept.
    Serving(Option<u32>),
    /// A one-shot command's pool: at most [`ONE_SHOT_CONNECTIONS`], opened only when needed.
    OneShot,
}

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
#[derive(Debug, Clone)]
pub struct Db {
    reads: DatabaseConnection,
    writes: DatabaseConnection,
}

/// Open `url`'s database, sized by `size`. SQLite files are created on first use and run in WAL
/// mode, so readers never wait for the writer; of the `size` connections one writes and the
/// others read. PostgreSQL connections carry the `application_name` `askloop` (or
/// `askloop-command` for a one-shot command), so `pg_stat_activity` tells them apart.
pub async fn connect(url: &str, size: PoolSize) -> Result<Db, DbErr> {
    if is_sqlite(url) {
        let (max, min) = match size {
            PoolSize::Serving(max) => (serving_connections(url, max), 1),
            PoolSize::OneShot => (ONE_SHOT_CONNECTIONS, 0),
        };
        let readers = max.max(MIN_POOL) - 1;
        // The writer's pool opens first: it creates the file and switches it to WAL, which a
        // `query_only` connection could not.
        let writes = Database::connect(sqlite_options(url, 1, min, false)).await?;
        let reads = Database::connect(sqlite_options(url, readers, min, true)).await?;
        return Ok(Db { reads, writes });
    }
    let (max, min, name) = match size {
        // Kept open all the time: a burst never waits for a connection to be opened on its
        // request path (tens of milliseconds each, more while several open at once), and one
        // closed (say, cut off mid-query) is opened again in the background.
        PoolSize::Serving(max) => {
            let max = serving_connections(url, max);
            (max, max, "askloop")
        }
        // A command runs a few statements and exits: nothing to keep warm.
        PoolSize::OneShot => (ONE_SHOT_CONNECTIONS, 0, "askloop-command"),
    };
    let writers = postgres_writers(max);
    let reads = Database::connect(postgres_options(
        url,
        max - writers,
        min.min(max - writers),
        name,
        ReadOnly::Yes,
    ))
    .await?;
    let writes = Database::connect(postgres_options(
        url,
        writers,
        min.min(writers),
        name,
        ReadOnly::No,
    ))
    .await?;
    Ok(Db { reads, writes })
}

/// How many connections a server's pool on `url` holds, given `ASKLOOP_DB_MAX_CONNECTIONS`
/// (`None`: the store's default): at least [`MIN_POOL`].
pub fn serving_connections(url: &str, max: Option<u32>) -> u32 {
    let default = if is_sqlite(url) {
        SQLITE_CONNECTIONS
    } else {
        POSTGRES_CONNECTIONS
    };
    max.unwrap_or(default).max(MIN_POOL)
}

/// How many of those connections write: SQLite's one writer, or [`postgres_writers`] of them.
pub fn serving_writers(url: &str, max: Option<u32>) -> u32 {
    if is_sqlite(url) {
        1
    } else {
        postgres_writers(serving_connections(url, max))
    }
}

/// How many of a PostgreSQL pool's `max` connections (at least [`MIN_POOL`]) write: half, and
/// at least one, so one is left to read. A write transaction holds its connection until it
/// commits, and reads beside it take the readers'.
pub fn postgres_writers(max: u32) -> u32 {
    (max / 2).clamp(1, max.saturating_sub(1).max(1))
}

/// A [`Db`] for the test harness, which sets up and checks rows directly: on SQLite its reads
/// may write too (they race the server's writer through the busy timeout, as any other process
/// on the file does), and its [`Db::begin_write`] takes the same turn as the server's writers.
/// Only a build with the `test-hooks` feature has it.
#[cfg(feature = "test-hooks")]
pub async fn connect_for_tests(url: &str) -> Result<Db, DbErr> {
    let pool = if is_sqlite(url) {
        Database::connect(sqlite_options(url, 2, 0, false)).await?
    } else {
        Database::connect(postgres_options(url, 2, 0, "askloop-tests", ReadOnly::No)).await?
    };
    Ok(Db {
        reads: pool.clone(),
        writes: pool,
    })
}

fn is_sqlite(url: &str) -> bool {
    url.starts_with("sqlite:")
}

fn sqlite_options(url: &str, max: u32, min: u32, query_only: bool) -> ConnectOptions {
    let mut options = ConnectOptions::new(url.to_owned());
    // A file opened in this process cannot hang up: no ping before each use (it would be one
    // more hop to the connection's thread on every query's way).
    options
        .sqlx_logging(false)
        .acquire_timeout(Duration::from_secs(10))
        .max_connections(max)
        .min_connections(min.min(max))
        .test_before_acquire(false)
        .map_sqlx_sqlite_opts(move |opts| {
            let opts = opts
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .foreign_keys(true)
                .busy_timeout(Duration::from_secs(10))
                // Pages are read from the file's mapping (the OS's cache, shared by every
                // connection) instead of being copied into each connection's own cache of 2 MiB
                // with a system call per page: a search reads its index's pages over and over.
                .pragma("mmap_size", SQLITE_MMAP_BYTES.to_string());
            if query_only {
                opts.pragma("query_only", "ON")
            } else {
                opts
            }
        });
    options
}

/// Whether a PostgreSQL pool's transactions are read-only (`default_transaction_read_only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadOnly {
    /// The readers' pool: a write through it fails.
    Yes,
    /// The writers' pool, which only [`Db::begin_write`] and the migration use, and the test
    /// harness's, which sets rows up directly.
    No,
}

fn postgres_options(
    url: &str,
    max: u32,
    min: u32,
    name: &'static str,
    read_only: ReadOnly,
) -> ConnectOptions {
    let mut options = ConnectOptions::new(url.to_owned());
    // A connection is pinged before use only after it sat idle for a while (a server restart,
    // a dropped link): on a busy pool the ping would be one more round trip in front of every
    // query.
    options
        .sqlx_logging(false)
        .acquire_timeout(Duration::from_secs(10))
        .max_connections(max)
        .min_connections(min)
        .test_before_acquire_if_idle_for(Duration::from_secs(30))
        .map_sqlx_postgres_opts(move |opts| {
            // Sent with the connection's start-up packet: no statement per connection. Said
            // either way, so a database whose own default is read-only still takes writes
            // through the writers' pool.
            let read_only = match read_only {
                ReadOnly::Yes => "on",
                ReadOnly::No => "off",
            };
            opts.application_name(name)
                .options([("default_transaction_read_only", read_only)])
        });
    options
}

impl Db {
    /// A `Db` connected to nothing, for what needs one only to exist (printing the schema).
    pub fn disconnected() -> Self {
        Self {
            reads: DatabaseConnection::default(),
            writes: DatabaseConnection::default(),
        }
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

    /// Which database it opens — its SQLite file, or its PostgreSQL server and database — so
    /// that what is kept per database in this process is shared by every pool that opens it.
    pub fn key(&self) -> String {
        database_key(&self.writes)
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
            DbBackend::Sqlite => Some(writer_gate(&self.writes).lock_owned().await),
            _ => None,
        };
        check().await?;
        Ok(self.begin_in_turn(turn).await?)
    }

    /// One statement that writes, as a transaction of its own (no `BEGIN`, no `COMMIT`: the
    /// database commits it when it ends, all of it or nothing), on a writer's connection; the
    /// rows it returns. For a write that is whole in one statement and worth the two round
    /// trips a transaction adds (PostgreSQL's plain intake batches). On SQLite it waits for this
    /// process's turn to write, as [`Db::begin_write`] does.
    pub async fn write_alone(&self, stmt: Statement) -> Result<Vec<QueryResult>, DbErr> {
        let _turn = match self.get_database_backend() {
            DbBackend::Sqlite => Some(writer_gate(&self.writes).lock_owned().await),
            _ => None,
        };
        self.writes.query_all_raw(stmt).await
    }

    /// [`Db::begin_write`] if nobody is writing in this process now, else `None` at once: for a
    /// write worth skipping rather than waiting for (a credential's time of use). On
    /// PostgreSQL, which has no turn, it always begins.
    pub async fn try_begin_write(&self) -> Result<Option<WriteTxn>, DbErr> {
        let turn = match self.get_database_backend() {
            DbBackend::Sqlite => match writer_gate(&self.writes).try_lock_owned() {
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

/// `stmt` with a trailing `LIMIT ?` and `OFFSET ?` written as the integers bound to them, on
/// SQLite; any other statement unchanged.
///
/// SQLite (3.47 on, the bundled one included) reads the value bound to a `LIMIT` or `OFFSET`
/// while it plans, and so marks the statement to be planned again whenever that parameter is
/// bound anew: every run of a cached statement with `LIMIT ?` (each `.one()` of the ORM, each
/// page) was compiled from its text again, schema lookups and all. With the numbers in the text
/// a cached statement runs as it was prepared; a statement's limit is one of a few values (1, a
/// page size), so the statement cache holds a few texts instead of one. Only integers are
/// written into the text.
pub fn fixed_limits(mut stmt: Statement) -> Statement {
    if stmt.db_backend != DbBackend::Sqlite {
        return stmt;
    }
    let Some(values) = stmt.values.as_mut() else {
        return stmt;
    };
    let Some(tail) = [" LIMIT ? OFFSET ?", " LIMIT ?", " OFFSET ?"]
        .into_iter()
        .find(|tail| stmt.sql.ends_with(tail))
    else {
        return stmt;
    };
    let bound = tail.matches('?').count();
    let Some(first) = values.0.len().checked_sub(bound) else {
        return stmt;
    };
    let Some(numbers) = values.0[first..]
        .iter()
        .map(integer)
        .collect::<Option<Vec<i64>>>()
    else {
        return stmt;
    };
    values.0.truncate(first);
    if values.0.is_empty() {
        stmt.values = None;
    }
    stmt.sql.truncate(stmt.sql.len() - tail.len());
    let mut numbers = numbers.into_iter();
    for word in tail.split('?').filter(|w| !w.is_empty()) {
        stmt.sql.push_str(word);
        if let Some(n) = numbers.next() {
            stmt.sql.push_str(&n.to_string());
        }
    }
    stmt
}

/// Every row `select` reads through `conn`, a pool used directly rather than through a [`Db`]
/// (the live feed's), with its limits written in as [`Db`] writes them ([`fixed_limits`]).
pub async fn all_with_fixed_limits<E: sea_orm::EntityTrait>(
    conn: &DatabaseConnection,
    select: sea_orm::Select<E>,
) -> Result<Vec<E::Model>, DbErr> {
    use sea_orm::QueryTrait;
    let stmt = fixed_limits(select.build(conn.get_database_backend()));
    E::find().from_raw_sql(stmt).all(conn).await
}

/// The integer `value` holds, if it is one that fits an `i64`.
fn integer(value: &sea_orm::Value) -> Option<i64> {
    use sea_orm::Value as V;
    match value {
        V::TinyInt(Some(n)) => Some(i64::from(*n)),
        V::SmallInt(Some(n)) => Some(i64::from(*n)),
        V::Int(Some(n)) => Some(i64::from(*n)),
        V::BigInt(Some(n)) => Some(*n),
        V::TinyUnsigned(Some(n)) => Some(i64::from(*n)),
        V::SmallUnsigned(Some(n)) => Some(i64::from(*n)),
        V::Unsigned(Some(n)) => Some(i64::from(*n)),
        V::BigUnsigned(Some(n)) => i64::try_from(*n).ok(),
        _ => None,
    }
}

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
            let turn = writer_gate(&db.writes).lock_owned().await;
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

/// How a write transaction begins: `IMMEDIATE` on SQLite (where `sqlite` says this is SQLite
/// and the process's turn is held); a bare `BEGIN` on PostgreSQL, whose writers' connections
/// are read-write already.
fn write_options(sqlite: bool) -> TransactionOptions {
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
fn is_busy(err: &DbErr) -> bool {
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
    txn: DatabaseTransaction,
    _turn: Option<OwnedMutexGuard<()>>,
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

/// The turn to write one SQLite file, shared by every pool of this process that opens it.
fn writer_gate(db: &DatabaseConnection) -> Arc<Mutex<()>> {
    static GATES: OnceLock<std::sync::Mutex<HashMap<String, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut gates = GATES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    gates.entry(database_key(db)).or_default().clone()
}

/// Which database a pool opens: its SQLite file, or its PostgreSQL server and database.
fn database_key(db: &DatabaseConnection) -> String {
    match db.get_database_backend() {
        DbBackend::Postgres => {
            let options = db.get_postgres_connection_pool().connect_options();
            format!(
                "postgres://{}:{}/{}",
                options.get_host(),
                options.get_port(),
                options.get_database().unwrap_or_default()
            )
        }
        _ => {
            let options = db.get_sqlite_connection_pool().connect_options();
            format!("sqlite:{}", options.get_filename().display())
        }
    }
}

/// Turns by key inside this process: writers that would all fight over one row (everyone
/// answering one question at once) wait here, in order, instead of each holding a pooled
/// connection while blocked on the row's lock. The database still decides: this only keeps the
/// queue out of it.
///
/// A turn may leave a note for the writers queued behind it (what it settled), which they read
/// when their turn comes instead of asking the database again. A key, and its note, is
/// forgotten as soon as nobody holds or waits for it: a note only ever reaches writers that were
/// already waiting when it was written.
pub struct Turns<N = ()> {
    keys: std::sync::Mutex<HashMap<i64, Arc<Mutex<Option<N>>>>>,
}

impl<N> Default for Turns<N> {
    fn default() -> Self {
        Self {
            keys: std::sync::Mutex::new(HashMap::new()),
        }
    }
}

/// One writer's turn for a key; the next waiter goes when it is dropped.
pub struct Turn<'a, N = ()> {
    turns: &'a Turns<N>,
    key: i64,
    lock: Option<Arc<Mutex<Option<N>>>>,
    guard: Option<OwnedMutexGuard<Option<N>>>,
}

impl<N> Turns<N> {
    /// How many writers hold or wait for the turn at `key` now: what a test waits on to know a
    /// writer has queued.
    pub fn queued(&self, key: i64) -> usize {
        let keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // The map holds one reference; each holder holds two (its lock and its guard), and so
        // does each waiter (its lock and the lock it waits on).
        keys.get(&key)
            .map_or(0, |lock| Arc::strong_count(lock).saturating_sub(1) / 2)
    }

    /// Wait for the turn at `key`.
    pub async fn take(&self, key: i64) -> Turn<'_, N> {
        let lock = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(key)
            .or_default()
            .clone();
        let guard = lock.clone().lock_owned().await;
        Turn {
            turns: self,
            key,
            lock: Some(lock),
            guard: Some(guard),
        }
    }
}

impl<N> Turn<'_, N> {
    /// The note a turn before this one left, if any.
    pub fn note(&self) -> Option<&N> {
        self.guard.as_ref().and_then(|guard| guard.as_ref())
    }

    /// Leave `note` for the writers waiting behind this turn.
    pub fn leave(&mut self, note: N) {
        if let Some(guard) = self.guard.as_mut() {
            **guard = Some(note);
        }
    }

    /// Take back the note a turn before this one left: what it said is no longer true (the
    /// question it settled is open again).
    pub fn clear(&mut self) {
        if let Some(guard) = self.guard.as_mut() {
            **guard = None;
        }
    }
}

impl<N> Drop for Turn<'_, N> {
    fn drop(&mut self) {
        self.guard = None;
        let mut keys = self
            .turns
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Ours and the map's: nobody else holds or waits for it.
        if self
            .lock
            .take()
            .is_some_and(|lock| Arc::strong_count(&lock) == 2)
        {
            keys.remove(&self.key);
        }
        // A waiter that gave up (its request went away) leaves a key only the map holds.
        keys.retain(|_, lock| Arc::strong_count(lock) > 1);
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

    fn sqlite(sql: &str, values: Vec<sea_orm::Value>) -> Statement {
        Statement::from_sql_and_values(DbBackend::Sqlite, sql, values)
    }

    #[test]
    fn a_postgres_pool_writes_on_half_its_connections_and_reads_on_the_rest() {
        assert_eq!(postgres_writers(MIN_POOL), 1);
        assert_eq!(postgres_writers(3), 1);
        assert_eq!(postgres_writers(POSTGRES_CONNECTIONS), 10);
        assert_eq!(postgres_writers(21), 10);
        for max in MIN_POOL..=200 {
            let writers = postgres_writers(max);
            assert!(writers >= 1 && writers < max, "{max}: {writers} write");
        }
    }

    #[test]
    fn a_servers_pool_is_the_stores_default_or_what_was_asked_and_never_under_two() {
        let (lite, pg) = ("sqlite://askloop.db", "postgres://h/askloop");
        assert_eq!(serving_connections(lite, None), SQLITE_CONNECTIONS);
        assert_eq!(serving_connections(pg, None), POSTGRES_CONNECTIONS);
        assert_eq!(serving_connections(pg, Some(7)), 7);
        assert_eq!(serving_connections(lite, Some(1)), MIN_POOL);
        assert_eq!(serving_writers(lite, None), 1);
        assert_eq!(serving_writers(lite, Some(30)), 1);
        assert_eq!(serving_writers(pg, None), 10);
        assert_eq!(serving_writers(pg, Some(6)), 3);
        assert_eq!(serving_writers(pg, Some(0)), 1);
    }

    #[test]
    fn a_trailing_limit_and_offset_are_written_as_their_numbers_on_sqlite_only() {
        let one = fixed_limits(sqlite(
            "SELECT a FROM t WHERE b = ? LIMIT ?",
            vec!["x".into(), 1_u64.into()],
        ));
        assert_eq!(one.sql, "SELECT a FROM t WHERE b = ? LIMIT 1");
        assert_eq!(one.values.map(|v| v.0), Some(vec!["x".into()]));

        let page = fixed_limits(sqlite(
            "SELECT a FROM t LIMIT ? OFFSET ?",
            vec![51_i64.into(), 100_i64.into()],
        ));
        assert_eq!(page.sql, "SELECT a FROM t LIMIT 51 OFFSET 100");
        assert_eq!(page.values, None, "no value is left to bind");

        let offset = fixed_limits(sqlite(
            "SELECT a FROM t LIMIT -1 OFFSET ?",
            vec![7_i32.into()],
        ));
        assert_eq!(offset.sql, "SELECT a FROM t LIMIT -1 OFFSET 7");

        // Anything but an integer that fits stays bound, as does any other statement's text.
        for (sql, values) in [
            ("SELECT a FROM t LIMIT ?", vec!["1; DROP TABLE t".into()]),
            ("SELECT a FROM t LIMIT ?", vec![u64::MAX.into()]),
            (
                "SELECT a FROM t LIMIT ?",
                vec![sea_orm::Value::BigInt(None)],
            ),
            ("SELECT a FROM t LIMIT ? OFFSET ?", vec![2_i64.into()]),
            ("SELECT a FROM t WHERE b = ?", vec![3_i64.into()]),
        ] {
            let stmt = sqlite(sql, values);
            assert_eq!(fixed_limits(stmt.clone()), stmt, "{sql}");
        }
        let postgres = Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT a FROM t LIMIT $1",
            [1_i64.into()],
        );
        assert_eq!(fixed_limits(postgres.clone()), postgres);
    }

    #[tokio::test]
    async fn a_page_and_one_row_read_the_same_rows_with_their_limits_written_in() {
        use sea_orm::{EntityTrait, QuerySelect};
        let (_file, db) = scratch::database(PoolSize::OneShot).await;
        let all = entity::contribution_types::Entity::find()
            .all(&db)
            .await
            .expect("read");
        assert!(all.len() >= 3, "the migration's contribution types");
        let page = entity::contribution_types::Entity::find()
            .limit(2)
            .offset(1)
            .all(&db)
            .await
            .expect("read");
        let ids = |rows: &[entity::contribution_types::Model]| {
            rows.iter().map(|r| r.id).collect::<Vec<_>>()
        };
        assert_eq!(ids(&page), ids(&all)[1..3]);
        let straight = all_with_fixed_limits(
            db.reads(),
            entity::contribution_types::Entity::find()
                .limit(2)
                .offset(1),
        )
        .await
        .expect("read");
        assert_eq!(ids(&straight), ids(&page), "the pool read directly");
        let one = entity::contribution_types::Entity::find()
            .one(&db)
            .await
            .expect("read");
        assert_eq!(one.map(|r| r.id), all.first().map(|r| r.id));
    }

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

    #[tokio::test]
    async fn a_note_reaches_the_writers_already_waiting_and_no_one_after() {
        let turns: Arc<Turns<&'static str>> = Arc::default();
        let mut first = turns.take(7).await;
        assert_eq!(first.note(), None);
        let queued = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.take(7).await.note().copied() })
        };
        // Wait until the second writer is queued behind the first: the map, the first turn
        // (its lock and its guard) and the waiter (its lock and the lock it waits on).
        while turns
            .keys
            .lock()
            .map(|keys| keys.get(&7).map_or(0, Arc::strong_count))
            .unwrap_or(0)
            < 5
        {
            tokio::task::yield_now().await;
        }
        first.leave("settled");
        drop(first);
        assert_eq!(queued.await.expect("the waiter"), Some("settled"));
        // Nobody waited any more: the key and its note are gone.
        assert_eq!(turns.take(7).await.note(), None);
    }

    #[tokio::test]
    async fn a_cleared_note_reaches_nobody_queued_behind_it() {
        let turns: Arc<Turns<&'static str>> = Arc::default();
        let mut settling = turns.take(7).await;
        settling.leave("settled");
        let reopening = {
            let turns = turns.clone();
            tokio::spawn(async move {
                let mut turn = turns.take(7).await;
                let seen = turn.note().copied();
                turn.clear();
                seen
            })
        };
        while turns.queued(7) < 2 {
            tokio::task::yield_now().await;
        }
        let after = {
            let turns = turns.clone();
            tokio::spawn(async move { turns.take(7).await.note().copied() })
        };
        while turns.queued(7) < 3 {
            tokio::task::yield_now().await;
        }
        drop(settling);
        assert_eq!(reopening.await.expect("the reopener"), Some("settled"));
        assert_eq!(after.await.expect("the writer after"), None);
        assert_eq!(turns.queued(7), 0);
    }

    #[tokio::test]
    async fn turns_at_one_key_go_one_at_a_time_and_are_forgotten_after() {
        let turns: Turns = Turns::default();
        let first = turns.take(7).await;
        // Another key is not held up.
        drop(turns.take(8).await);
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(50), turns.take(7));
        assert!(
            waiting.await.is_err(),
            "a second turn at 7 waits for the first"
        );
        drop(first);
        let second = turns.take(7).await;
        assert_eq!(turns.keys.lock().map(|k| k.len()).unwrap_or(0), 1);
        drop(second);
        assert_eq!(
            turns.keys.lock().map(|k| k.len()).unwrap_or(usize::MAX),
            0,
            "nobody holds or waits: no key is kept"
        );
    }
}
