//! Connecting: pools sized for the process, SQLite's WAL files and PostgreSQL's read-only
//! readers, each store's options.

use super::Db;
use std::time::Duration;

use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{ConnectOptions, Database, DbErr};

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
        return Ok(Db::with_pools(reads, writes));
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
    Ok(Db::with_pools(reads, writes))
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
/// on the file does). Opened `beside` the app's `Db`, it shares what that one keeps for the
/// database: its [`Db::begin_write`] takes the same turn as the app's writers, and it sees the
/// same intake queue and question turns. Only a build with the `test-hooks` feature has it.
#[cfg(feature = "test-hooks")]
pub async fn connect_for_tests(url: &str, beside: Option<&Db>) -> Result<Db, DbErr> {
    let pool = if is_sqlite(url) {
        Database::connect(sqlite_options(url, 2, 0, false)).await?
    } else {
        Database::connect(postgres_options(url, 2, 0, "askloop-tests", ReadOnly::No)).await?
    };
    let mut db = Db::with_pools(pool.clone(), pool);
    if let Some(app) = beside {
        db.kept = app.kept.clone();
    }
    Ok(db)
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
