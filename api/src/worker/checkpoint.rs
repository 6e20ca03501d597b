//! The SQLite write-ahead log's checkpoint, in the background (docs/architecture.md#sqlites-checkpoint).
//!
//! In WAL mode a commit appends pages to the log, and the log's pages are copied back into the
//! database file by a checkpoint — by default inside whichever commit finds the log past 1,000
//! pages, so that commit (and every intake waiting behind the writer) also waits for the copy
//! and the database file's `fsync`. A serving process instead checkpoints here, every
//! [`SQLITE_CHECKPOINT_EVERY`], without taking the write lock; its writer checkpoints on commit
//! only past [`SQLITE_WRITER_CHECKPOINT_PAGES`](crate::db::SQLITE_WRITER_CHECKPOINT_PAGES),
//! should this fall behind. PostgreSQL checkpoints by itself: there this returns at once.

use std::time::Duration;

use sea_orm::DbBackend;

use crate::db::{Db, SQLITE_CHECKPOINT_EVERY};

/// Checkpoint `db`'s log every [`SQLITE_CHECKPOINT_EVERY`] until cancelled (SQLite only).
pub(super) async fn checkpoint_forever(db: Db) {
    checkpoint_every(db, SQLITE_CHECKPOINT_EVERY).await;
}

async fn checkpoint_every(db: Db, every: Duration) {
    if db.get_database_backend() != DbBackend::Sqlite {
        return;
    }
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A failure is logged once until a checkpoint succeeds again, not every tick.
    let mut failing = false;
    loop {
        tick.tick().await;
        match db.checkpoint().await {
            Ok(_) if failing => {
                tracing::info!("the write-ahead log is checkpointed again");
                failing = false;
            }
            Ok(_) => {}
            Err(err) if !failing => {
                tracing::warn!(error = %err, "checkpointing the write-ahead log failed; the writer checkpoints on commit once the log is large");
                failing = true;
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::PoolSize;
    use crate::db::scratch::database;
    use sea_orm::{ConnectionTrait, Statement};

    async fn pages_in_file(db: &Db) -> i64 {
        let row = db
            .query_one_raw(Statement::from_string(
                DbBackend::Sqlite,
                "SELECT page_count FROM pragma_page_count()",
            ))
            .await
            .expect("the page count")
            .expect("a row");
        row.try_get_by_index(0).expect("a number")
    }

    /// A serving process's commits leave the log to the background checkpoint, which copies it
    /// into the database file while the writer goes on.
    #[tokio::test]
    async fn the_log_is_copied_into_the_file_in_the_background_not_by_the_commit() {
        let (scratch, db) = database(PoolSize::Serving(None)).await;
        let file = scratch.path().to_owned();
        {
            let txn = db.begin_write().await.expect("a write");
            txn.execute_unprepared("CREATE TABLE filler (body BLOB)")
                .await
                .expect("a table");
            txn.commit().await.expect("committed");
        }
        // Past SQLite's default of 1,000 pages, in commits of ~40 pages each.
        for _ in 0..40 {
            let txn = db.begin_write().await.expect("a write");
            txn.execute_unprepared(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) \
                 INSERT INTO filler SELECT randomblob(4000) FROM n",
            )
            .await
            .expect("rows");
            txn.commit().await.expect("committed");
        }
        let bytes = |path: &std::path::Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let before = bytes(&file);
        // SQLite's default would have copied at least 1,000 pages (4 MB) by now.
        assert!(
            before < 1 << 20,
            "the commits checkpointed by themselves: the file holds {before} bytes"
        );
        assert!(pages_in_file(&db).await > 1_000, "the rows are readable");
        let stop = tokio_util::sync::CancellationToken::new();
        let running = tokio::spawn(
            stop.clone()
                .run_until_cancelled_owned(checkpoint_every(db.clone(), Duration::from_millis(10))),
        );
        let mut waited = 0;
        while bytes(&file) < 1_000 * 4096 {
            assert!(waited < 1_000, "the log was never copied into the file");
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += 1;
        }
        stop.cancel();
        running.await.expect("the checkpoint loop ended");
    }

    #[tokio::test]
    async fn a_closed_database_is_reported_and_the_loop_goes_on() {
        let (_scratch, db) = database(PoolSize::Serving(None)).await;
        db.clone().close().await.expect("closed");
        assert!(
            db.checkpoint().await.is_err(),
            "a closed pool cannot checkpoint"
        );
        let stop = tokio_util::sync::CancellationToken::new();
        let running = tokio::spawn(
            stop.clone()
                .run_until_cancelled_owned(checkpoint_every(db, Duration::from_millis(5))),
        );
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!running.is_finished(), "the loop went on after a failure");
        stop.cancel();
        running.await.expect("the loop ended when cancelled");
    }
}
