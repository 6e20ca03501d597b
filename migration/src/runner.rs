//! Running askloop's migrations: which have been applied, applying the rest in order, and
//! rolling the newest back.
//!
//! What has been applied is kept in the table `seaql_migrations` (`version`, the migration's
//! name; `applied_at`, Unix seconds), the table and columns every askloop database has had from
//! its first migration, so a database migrated by an earlier build goes on from where it is.
//!
//! Each migration runs in a transaction of its own on PostgreSQL (a savepoint when the caller
//! runs the whole in one, as `askloop::db::migrate` does), and on SQLite only when it asks for
//! one ([`MigrationTrait::use_transaction`]); its row is written in the same transaction, so a
//! migration is recorded exactly when its changes are kept.

use std::collections::HashSet;
use std::time::{SystemTime, UNIX_EPOCH};

use sea_orm::sea_query::{
    Alias, ColumnDef, Expr, ExprTrait, IndexCreateStatement, IndexDropStatement, Order, Query,
    Table, TableAlterStatement, TableCreateStatement, TableDropStatement,
};
use sea_orm::{
    ConnectionTrait, DatabaseExecutor, DbBackend, DbErr, IntoDatabaseExecutor, StatementBuilder,
    TransactionTrait,
};

/// The table that records which migrations have been applied.
pub const MIGRATIONS_TABLE: &str = "seaql_migrations";

/// A migration's name: its file's, which orders it and records it once applied.
pub trait MigrationName {
    fn name(&self) -> &str;
}

/// One step of the schema, forwards and back.
#[async_trait::async_trait]
pub trait MigrationTrait: MigrationName + Send + Sync {
    /// Make the change.
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr>;

    /// Undo it.
    async fn down(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
        Err(DbErr::Migration(format!(
            "migration {} cannot be rolled back",
            self.name()
        )))
    }

    /// Whether the migration runs in a transaction of its own: `None` follows the database
    /// (PostgreSQL yes, SQLite no); `Some(_)` decides for both.
    fn use_transaction(&self) -> Option<bool> {
        None
    }
}

/// What a migration changes the schema through.
pub struct SchemaManager<'c> {
    conn: DatabaseExecutor<'c>,
}

impl<'c> SchemaManager<'c> {
    pub fn new(conn: impl IntoDatabaseExecutor<'c>) -> Self {
        Self {
            conn: conn.into_database_executor(),
        }
    }

    /// Run one statement.
    pub async fn exec_stmt<S: StatementBuilder>(&self, stmt: S) -> Result<(), DbErr> {
        self.conn.execute(&stmt).await.map(|_| ())
    }

    pub fn get_database_backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    /// The connection (or transaction) the migration runs on, for statements of its own.
    pub fn get_connection(&self) -> &DatabaseExecutor<'c> {
        &self.conn
    }

    pub async fn create_table(&self, stmt: TableCreateStatement) -> Result<(), DbErr> {
        self.exec_stmt(stmt).await
    }

    pub async fn alter_table(&self, stmt: TableAlterStatement) -> Result<(), DbErr> {
        self.exec_stmt(stmt).await
    }

    pub async fn drop_table(&self, stmt: TableDropStatement) -> Result<(), DbErr> {
        self.exec_stmt(stmt).await
    }

    pub async fn create_index(&self, stmt: IndexCreateStatement) -> Result<(), DbErr> {
        self.exec_stmt(stmt).await
    }

    pub async fn drop_index(&self, stmt: IndexDropStatement) -> Result<(), DbErr> {
        self.exec_stmt(stmt).await
    }
}

/// A migration that has been applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The migration's name.
    pub version: String,
    /// When, in Unix seconds.
    pub applied_at: i64,
}

/// A list of migrations, oldest first, and how to run them.
#[async_trait::async_trait]
pub trait MigratorTrait: Send {
    /// Every migration, oldest first.
    fn migrations() -> Vec<Box<dyn MigrationTrait>>;

    /// The migrations applied to `db`, oldest first. An applied migration this build does not
    /// know (the database was migrated by a newer one) is an error: nothing is run against a
    /// schema this build does not understand.
    async fn get_applied_migrations<'c, C>(db: C) -> Result<Vec<Applied>, DbErr>
    where
        C: IntoDatabaseExecutor<'c> + 'c,
    {
        read_applied(&db.into_database_executor(), &Self::migrations()).await
    }

    /// Apply the pending migrations in order (at most `steps` of them).
    async fn up<'c, C>(db: C, steps: Option<u32>) -> Result<(), DbErr>
    where
        C: IntoDatabaseExecutor<'c> + 'c,
    {
        let db = db.into_database_executor();
        let migrations = Self::migrations();
        let done = applied_names(&db, &migrations).await?;
        let pending = migrations.iter().filter(|m| !done.contains(m.name()));
        run_all(&db, pending, steps, Direction::Up).await
    }

    /// Roll back the newest applied migrations (at most `steps` of them), newest first.
    async fn down<'c, C>(db: C, steps: Option<u32>) -> Result<(), DbErr>
    where
        C: IntoDatabaseExecutor<'c> + 'c,
    {
        let db = db.into_database_executor();
        let migrations = Self::migrations();
        let done = applied_names(&db, &migrations).await?;
        let newest_first = migrations.iter().rev().filter(|m| done.contains(m.name()));
        run_all(&db, newest_first, steps, Direction::Down).await
    }
}

/// The migrations applied to `db` (its record created if it has none), once every one of them
/// is known to be among `migrations`.
async fn read_applied(
    db: &DatabaseExecutor<'_>,
    migrations: &[Box<dyn MigrationTrait>],
) -> Result<Vec<Applied>, DbErr> {
    install(db).await?;
    let applied = applied(db).await?;
    check_known(migrations, &applied)?;
    Ok(applied)
}

/// The names of the migrations applied to `db`, as [`read_applied`] reads them.
async fn applied_names(
    db: &DatabaseExecutor<'_>,
    migrations: &[Box<dyn MigrationTrait>],
) -> Result<HashSet<String>, DbErr> {
    Ok(read_applied(db, migrations)
        .await?
        .into_iter()
        .map(|applied| applied.version)
        .collect())
}

/// Run the first `steps` of `chosen` (all of them without `steps`) in `direction`, in order.
async fn run_all<'m>(
    db: &DatabaseExecutor<'_>,
    chosen: impl Iterator<Item = &'m Box<dyn MigrationTrait>>,
    steps: Option<u32>,
    direction: Direction,
) -> Result<(), DbErr> {
    for migration in chosen.take(limit(steps)) {
        let doing = match direction {
            Direction::Up => "applying migration",
            Direction::Down => "rolling migration back",
        };
        tracing::info!(migration = migration.name(), "{doing}");
        run(db, migration.as_ref(), direction).await?;
    }
    Ok(())
}

fn limit(steps: Option<u32>) -> usize {
    steps.map_or(usize::MAX, |n| n as usize)
}

#[derive(Clone, Copy)]
enum Direction {
    Up,
    Down,
}

/// Run one migration and record it, in its own transaction when it has one.
#[expect(
    clippy::disallowed_methods,
    reason = "a migration's own transaction, inside the run's (a savepoint, under its lock)"
)]
async fn run(
    db: &DatabaseExecutor<'_>,
    migration: &dyn MigrationTrait,
    direction: Direction,
) -> Result<(), DbErr> {
    let own_transaction = migration
        .use_transaction()
        .unwrap_or(db.get_database_backend() == DbBackend::Postgres);
    if own_transaction {
        let txn = db.begin().await?;
        step(&SchemaManager::new(&txn), migration, direction).await?;
        txn.commit().await
    } else {
        step(&SchemaManager::new(borrowed(db)), migration, direction).await
    }
}

/// `db`, borrowed again.
fn borrowed<'a>(db: &'a DatabaseExecutor<'_>) -> DatabaseExecutor<'a> {
    match db {
        DatabaseExecutor::Connection(conn) => DatabaseExecutor::Connection(conn),
        DatabaseExecutor::Transaction(txn) => DatabaseExecutor::Transaction(txn),
        DatabaseExecutor::OwnedTransaction(txn) => DatabaseExecutor::Transaction(txn),
    }
}

async fn step(
    manager: &SchemaManager<'_>,
    migration: &dyn MigrationTrait,
    direction: Direction,
) -> Result<(), DbErr> {
    let table = Alias::new(MIGRATIONS_TABLE);
    let version = Expr::col(Alias::new("version"));
    match direction {
        Direction::Up => {
            migration.up(manager).await?;
            let applied_at = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs() as i64);
            manager
                .exec_stmt(
                    Query::insert()
                        .into_table(table)
                        .columns([Alias::new("version"), Alias::new("applied_at")])
                        .values_panic([migration.name().into(), applied_at.into()])
                        .to_owned(),
                )
                .await
        }
        Direction::Down => {
            migration.down(manager).await?;
            manager
                .exec_stmt(
                    Query::delete()
                        .from_table(table)
                        .and_where(version.eq(migration.name()))
                        .to_owned(),
                )
                .await
        }
    }
}

/// Create the record of applied migrations if the database has none yet.
async fn install(db: &DatabaseExecutor<'_>) -> Result<(), DbErr> {
    let create = Table::create()
        .table(Alias::new(MIGRATIONS_TABLE))
        .if_not_exists()
        .col(
            ColumnDef::new(Alias::new("version"))
                .string()
                .not_null()
                .primary_key(),
        )
        .col(
            ColumnDef::new(Alias::new("applied_at"))
                .big_integer()
                .not_null(),
        )
        .to_owned();
    db.execute(&create).await.map(|_| ())
}

async fn applied(db: &DatabaseExecutor<'_>) -> Result<Vec<Applied>, DbErr> {
    let select = Query::select()
        .columns([Alias::new("version"), Alias::new("applied_at")])
        .from(Alias::new(MIGRATIONS_TABLE))
        .order_by(Alias::new("version"), Order::Asc)
        .to_owned();
    db.query_all(&select)
        .await?
        .iter()
        .map(|row| {
            Ok(Applied {
                version: row.try_get("", "version")?,
                applied_at: row.try_get("", "applied_at")?,
            })
        })
        .collect()
}

/// An error naming every applied migration missing from `migrations`.
fn check_known(migrations: &[Box<dyn MigrationTrait>], applied: &[Applied]) -> Result<(), DbErr> {
    let known: HashSet<&str> = migrations.iter().map(|m| m.name()).collect();
    let unknown: Vec<&str> = applied
        .iter()
        .map(|a| a.version.as_str())
        .filter(|version| !known.contains(version))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(DbErr::Migration(format!(
            "the database has migrations this build does not know: {} (was it migrated by a \
             newer askloop?)",
            unknown.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str);

    impl MigrationName for Named {
        fn name(&self) -> &str {
            self.0
        }
    }

    #[async_trait::async_trait]
    impl MigrationTrait for Named {
        async fn up(&self, _manager: &SchemaManager) -> Result<(), DbErr> {
            Ok(())
        }
    }

    fn applied(version: &str) -> Applied {
        Applied {
            version: version.to_owned(),
            applied_at: 0,
        }
    }

    #[test]
    fn an_applied_migration_this_build_does_not_know_is_refused_by_name() {
        let known: Vec<Box<dyn MigrationTrait>> =
            vec![Box::new(Named("m1")), Box::new(Named("m2"))];
        assert!(check_known(&known, &[applied("m1"), applied("m2")]).is_ok());
        let err = check_known(&known, &[applied("m1"), applied("m9")]).unwrap_err();
        assert!(err.to_string().contains("m9"), "{err}");
        assert!(!err.to_string().contains("m1,"), "{err}");
    }

    #[test]
    fn no_steps_means_all_of_them() {
        assert_eq!(limit(None), usize::MAX);
        assert_eq!(limit(Some(2)), 2);
    }
}
