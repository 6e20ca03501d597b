//! Writes cannot start outside a write transaction (docs/architecture.md#writes): the `Db` the
//! server runs on refuses a statement that writes through its reading side — SQLite's readers
//! are `query_only`, PostgreSQL's readers' pool begins every transaction read-only — so a write that
//! slips past the types fails the suite instead of racing the writer. `Db::begin_write` is the
//! one way to write, on both stores.

use askloop::db::{self, Db, PoolSize};
use askloop_tests::{Backend, TestDatabase};
use sea_orm::{ConnectionTrait, DbBackend, Statement};

fn statement(backend: DbBackend, sql: &str) -> Statement {
    Statement::from_string(backend, sql.to_owned())
}

const A_LINK_KEY: &str = "INSERT INTO link_keys (purpose, secret, created_at) \
                          VALUES ('links', '00', '2026-12-01T00:00:00Z')";

/// Insert a link key through `Db::begin_write`, the one way to write, and commit it.
async fn write_a_link_key(db: &Db) {
    let txn = db.begin_write().await.expect("begun");
    txn.execute_raw(statement(db.get_database_backend(), A_LINK_KEY))
        .await
        .expect("written inside begin_write");
    txn.commit().await.expect("committed");
}

async fn stray_writes_are_refused_and_begin_write_lands(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    for size in [PoolSize::Serving(Some(4)), PoolSize::OneShot] {
        let db: Db = db::connect(&database.url, size).await.expect("connected");
        db::migrate(&db).await.expect("migrated");
        let kind = db.get_database_backend();

        let refused = db
            .execute_raw(statement(kind, A_LINK_KEY))
            .await
            .expect_err("a write on the reading side is refused");
        let words = refused.to_string();
        assert!(
            words.contains("readonly") || words.contains("read-only transaction"),
            "{size:?}: refused as a read-only write: {words}"
        );
        // Unprepared text is refused alike.
        assert!(db.execute_unprepared(A_LINK_KEY).await.is_err(), "{size:?}");

        write_a_link_key(&db).await;
        let kept = db
            .query_all_raw(statement(kind, "SELECT purpose FROM link_keys"))
            .await
            .expect("read");
        assert!(!kept.is_empty(), "{size:?}: the write landed");
        db.execute_unprepared("DELETE FROM link_keys")
            .await
            .expect_err("a delete on the reading side is refused too");
        let txn = db.begin_write().await.expect("begun");
        txn.execute_unprepared("DELETE FROM link_keys")
            .await
            .expect("deleted inside begin_write");
        txn.commit().await.expect("committed");
        db.close().await.expect("closed");
    }
}

#[tokio::test]
async fn on_sqlite_only_begin_write_writes() {
    stray_writes_are_refused_and_begin_write_lands(Backend::Sqlite).await;
}

#[tokio::test]
async fn on_postgres_only_begin_write_writes() {
    stray_writes_are_refused_and_begin_write_lands(Backend::Postgres).await;
}

/// PostgreSQL's writers' pool says `default_transaction_read_only = off` itself, so a database
/// whose own default is read-only (set by its owner) still takes askloop's writes, and only
/// those: the readers' pool still refuses them.
#[tokio::test]
async fn on_postgres_a_database_read_only_by_default_takes_writes_through_begin_write_only() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        eprintln!("skipped: TEST_DATABASE_URL is not set");
        return;
    };
    let setup = db::connect_for_tests(&database.url, None)
        .await
        .expect("connected");
    setup
        .execute_unprepared(
            "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', \
             current_database()); END $$",
        )
        .await
        .expect("the database's default made read-only");
    setup.close().await.expect("closed");

    let db: Db = db::connect(&database.url, PoolSize::Serving(Some(2)))
        .await
        .expect("connected");
    db::migrate(&db)
        .await
        .expect("migrated under a read-only default");
    let kind = db.get_database_backend();
    write_a_link_key(&db).await;
    let refused = db
        .execute_raw(statement(kind, A_LINK_KEY))
        .await
        .expect_err("the reading side still refuses");
    assert!(
        refused.to_string().contains("read-only transaction"),
        "{refused}"
    );
    db.close().await.expect("closed");
}
