//! Group commit for intake (docs/architecture.md#intake-group-commit).
//!
//! A transaction's fixed costs — `BEGIN`, `COMMIT`, their round trips, the write-ahead log
//! frames of every page it touched — are most of what one small intake costs. So intakes that
//! arrive while batches are being written wait together, and are written together: one
//! transaction, one read of the niches they name, one insert of their new questions, then each
//! intake finished in turn exactly as it would be alone (its own duplicate check, budget
//! reservation and audit rows), then one commit. Each request is answered only after that
//! commit: nothing is acknowledged that is not in the database.
//!
//! - SQLite has one writer at a time: one batch is written at a time. PostgreSQL writes up to
//!   [`POSTGRES_WRITERS`] batches at once (each on its own connection), the second only while
//!   more intakes wait than one batch takes.
//! - A batch is written by a task of its own, started by an intake that finds fewer batches being
//!   written than allowed and ending when none is waiting, so a client that goes away mid-request
//!   cannot cancel the others' writes.
//! - An intake refused on the way (over budget, or another agent's external id) leaves nothing
//!   behind and does not disturb the rest of its batch.
//! - Any other failure (a database error) rolls the whole batch back, and its intakes are then
//!   written one by one, each in its own transaction, so one cannot fail another.
//!
//! The queue belongs to the database: its `Db` keeps it ([`Db::kept`]), so every clone of that
//! `Db` — every request of the process — queues in the same place.

use std::sync::{Arc, Mutex};

use crate::db::Db;
use sea_orm::DbBackend;
use tokio::sync::oneshot;

use super::{IntakeOutcome, Request, store_alone, write_all};
use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::audit;

/// The most intakes one transaction takes.
pub const MOST: usize = 128;

/// The most on PostgreSQL. Its statements travel over TCP, and the driver does not set
/// `TCP_NODELAY`: a statement too large for one write leaves its tail waiting for the server's
/// delayed acknowledgement, about 40 ms; batches of up to 128 took a fraction of the rate of
/// batches of 32 (docs/benchmarks.md#intake). Large questions are kept apart by the insert
/// itself, which splits at [`super::INSERT_BYTES`].
pub const MOST_POSTGRES: usize = 32;

/// How many batches one process writes at once on PostgreSQL. The second starts only while
/// more intakes wait than one batch takes ([`starts_writer`]): each batch costs PostgreSQL a
/// fixed five statements, so under light load fewer, larger batches win, and a second writer
/// then only splits them; under heavy load one writer's statements leave the database idle
/// between them, and a second fills the gaps (docs/benchmarks.md#intake). Other instances
/// write batches of their own.
pub const POSTGRES_WRITERS: usize = 2;

/// The environment variable that makes the process abort after writing a batch and before
/// committing it: for the test that shows no intake is acknowledged before it is durable. Only
/// a build with the `test-hooks` feature (which the black-box suite turns on) reads it; it is no
/// setting of askloop's, so it is not a field of `config::Settings`.
#[cfg(feature = "test-hooks")]
pub const ABORT_BEFORE_COMMIT: &str = "ASKLOOP_TEST_ABORT_BEFORE_COMMIT";

/// An intake waiting for its batch, with where to send its outcome.
struct Job {
    request: Request,
    reply: oneshot::Sender<Result<IntakeOutcome, ServiceError>>,
}

/// The intakes waiting for one database, and how many batches are being written: kept by the
/// database's [`Db`].
#[derive(Default)]
struct Queue(Mutex<Waiting>);

#[derive(Default)]
struct Waiting {
    jobs: Vec<Job>,
    writers: usize,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How batches are written to one store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    /// The most batches written at once.
    writers: usize,
    /// The most intakes in one batch.
    most: usize,
}

impl Limits {
    fn of(backend: DbBackend) -> Self {
        match backend {
            DbBackend::Postgres => Self {
                writers: POSTGRES_WRITERS,
                most: MOST_POSTGRES,
            },
            // One process writes the file: no socket between them.
            _ => Self {
                writers: 1,
                most: MOST,
            },
        }
    }
}

/// Whether an intake just queued starts a writer: when none is writing, or when fewer than the
/// limit are and more intakes wait than one batch takes (those writing are behind).
fn starts_writer(writing: usize, waiting: usize, limits: Limits) -> bool {
    writing == 0 || (writing < limits.writers && waiting > limits.most)
}

/// Write `request` with whatever other intakes arrive meanwhile; its outcome once committed.
pub(super) async fn submit(
    db: &Db,
    hint: &ChangeHint,
    request: Request,
) -> Result<IntakeOutcome, ServiceError> {
    let (reply, outcome) = oneshot::channel();
    let queue = db.kept::<Queue>();
    let limits = Limits::of(db.get_database_backend());
    let start = {
        let mut waiting = queue.lock();
        waiting.jobs.push(Job { request, reply });
        let start = starts_writer(waiting.writers, waiting.jobs.len(), limits);
        if start {
            waiting.writers += 1;
        }
        start
    };
    if start {
        tokio::spawn(drain(db.clone(), hint.clone(), queue, limits));
    }
    outcome.await.map_err(|_| {
        ServiceError::Internal(anyhow::anyhow!(
            "the intake batch ended without an answer for this question"
        ))
    })?
}

/// Counts the writer out when it ends, however it ends (a panic included), so the next intake
/// starts a new one.
struct Writing {
    queue: Arc<Queue>,
    counted_out: bool,
}

impl Drop for Writing {
    fn drop(&mut self) {
        if !self.counted_out {
            let mut waiting = self.queue.lock();
            waiting.writers = waiting.writers.saturating_sub(1);
        }
    }
}

/// Write batches until no intake waits.
async fn drain(db: Db, hint: ChangeHint, queue: Arc<Queue>, limits: Limits) {
    let mut writing = Writing {
        queue,
        counted_out: false,
    };
    loop {
        let batch: Vec<Job> = {
            let mut waiting = writing.queue.lock();
            if waiting.jobs.is_empty() {
                // Counted out under the same lock that saw the queue empty: an intake queued
                // after this finds a writer's place free and starts one.
                waiting.writers = waiting.writers.saturating_sub(1);
                writing.counted_out = true;
                return;
            }
            let take = waiting.jobs.len().min(limits.most);
            waiting.jobs.drain(..take).collect()
        };
        write_batch(&db, &hint, batch).await;
    }
}

/// Write `batch` in one transaction, or, if that fails, each of its intakes alone; then answer
/// every one.
async fn write_batch(db: &Db, hint: &ChangeHint, batch: Vec<Job>) {
    let requests: Vec<&Request> = batch.iter().map(|job| &job.request).collect();
    let outcomes = match write_together(db, &requests).await {
        Ok(outcomes) => {
            if outcomes.iter().any(|o| matches!(o, Ok(o) if !o.duplicate)) {
                hint.changed();
            }
            outcomes
        }
        Err(err) => {
            tracing::warn!(error = %err, intakes = requests.len(), "an intake batch failed; writing its intakes one by one");
            let mut outcomes = Vec::with_capacity(requests.len());
            for request in &requests {
                // Each signals its own change.
                outcomes.push(store_alone(db, hint, request).await);
            }
            outcomes
        }
    };
    let mut outcomes = outcomes.into_iter();
    for job in batch {
        let outcome = outcomes.next().unwrap_or_else(|| {
            Err(ServiceError::Internal(anyhow::anyhow!(
                "an intake of the batch was never written"
            )))
        });
        // A client that went away no longer waits; its question is stored all the same.
        let _ = job.reply.send(outcome);
    }
}

/// One transaction for `requests`: every intake's outcome, or the error that rolled it back.
async fn write_together(
    db: &Db,
    requests: &[&Request],
) -> Result<Vec<Result<IntakeOutcome, ServiceError>>, ServiceError> {
    let txn = db.begin_write().await?;
    let mut created = Vec::with_capacity(requests.len());
    let outcomes = match write_all(&txn, requests, &mut created).await {
        Ok(outcomes) => outcomes,
        Err(err) => {
            txn.rollback().await?;
            return Err(err);
        }
    };
    // Every question's `question.created` row in one statement.
    if let Err(err) = audit::record_all(&txn, created).await {
        txn.rollback().await?;
        return Err(err.into());
    }
    #[cfg(feature = "test-hooks")]
    abort_if_asked();
    txn.commit().await?;
    Ok(outcomes)
}

/// The crash test's hook: abort the process here, the batch written and not committed, when
/// [`ABORT_BEFORE_COMMIT`] is set.
#[cfg(feature = "test-hooks")]
fn abort_if_asked() {
    static SET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *SET.get_or_init(|| std::env::var_os(ABORT_BEFORE_COMMIT).is_some()) {
        eprintln!("askloop: {ABORT_BEFORE_COMMIT} is set: aborting before the batch commits");
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_postgres_writer_starts_only_while_more_wait_than_a_batch_takes() {
        let postgres = Limits::of(DbBackend::Postgres);
        assert_eq!(postgres.most, MOST_POSTGRES);
        assert!(
            starts_writer(0, 1, postgres),
            "the first intake starts the writer"
        );
        assert!(
            !starts_writer(1, MOST_POSTGRES, postgres),
            "one batch's worth: the one writer takes it"
        );
        assert!(
            starts_writer(1, MOST_POSTGRES + 1, postgres),
            "more: a second writer"
        );
        assert!(
            !starts_writer(POSTGRES_WRITERS, 10 * MOST_POSTGRES, postgres),
            "never past the limit"
        );
    }

    #[test]
    fn sqlite_has_one_writer_however_many_wait() {
        let sqlite = Limits::of(DbBackend::Sqlite);
        assert_eq!(
            sqlite,
            Limits {
                writers: 1,
                most: MOST,
            }
        );
        assert!(starts_writer(0, 1, sqlite));
        assert!(!starts_writer(1, 100 * MOST, sqlite));
    }
}
