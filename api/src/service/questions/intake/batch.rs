//! Group commit for intake (docs/architecture.md#intake-group-commit).
//!
//! A transaction's fixed costs — `BEGIN`, `COMMIT`, their round trips, the write-ahead log
//! frames of every page it touched — are most of what one small intake costs. So intakes that
//! arrive while batches are being written wait together, and are written together: one
//! transaction, one read of the niches they name, one insert of their new questions, then each
//! intake finished in turn exactly as it would be alone (its own duplicate check, budget
//! reservation and audit rows), then one commit. Each request is answered
//! only after that commit: nothing is acknowledged that is not in the database.
//!
//! - On PostgreSQL a plain batch (nothing to reserve, no one to mail or call, no wave to hold
//!   back) is written as one statement with no transaction around it ([`plain`]), relying on
//!   its niches as the queue's batches last read them ([`Known`]) — the statement checks they
//!   are unchanged — or on a read of them first, before any transaction; the rest, and whatever
//!   that statement did not store (a duplicate), are written in a transaction as above.
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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crate::db::Db;
use sea_orm::DbBackend;
use tokio::sync::oneshot;

use super::known::Known;
use super::plain::Written;
use super::{IntakeOutcome, Niches, Request, load_niches, plain, store_alone, write_all};
use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::audit;

/// The most intakes one transaction takes.
pub const MOST: usize = 128;

/// The most on PostgreSQL. Its statements travel over TCP, and the driver (sqlx 0.9) does not
/// set `TCP_NODELAY`: a statement too large for one write leaves its tail waiting for the
/// server's delayed acknowledgement, about 40 ms a statement; batches of up to 128 took a
/// fraction of the rate of batches of 32 (docs/benchmarks.md#intake).
pub const MOST_POSTGRES: usize = 32;

/// About how many bytes of questions (and, in a plain batch, their audit rows, which travel in
/// the same statement) one batch takes on PostgreSQL (one intake at least, however large): for
/// the same reason as [`MOST_POSTGRES`], measured in bytes. The driver sends
/// a statement over TLS one record (16 KiB) a write, so the tail of a larger one waits for the
/// first record's acknowledgement, which PostgreSQL's side delays by about 40 ms: large
/// questions (`loadgen --context-bytes 1024`) met it at 32 a batch and no longer under this
/// limit (docs/benchmarks.md#intake). The load generator's short questions count about 510
/// bytes each with their audit rows: 28 a batch.
pub const BYTES_POSTGRES: usize = 14 * 1024;

/// How many batches one process writes at once on PostgreSQL. The second starts only while
/// more intakes wait than one batch takes ([`starts_writer`]): each batch costs PostgreSQL a
/// fixed five statements, so under light load fewer, larger batches win, and a second writer
/// then only splits them; under heavy load one writer's statements leave the database idle
/// between them, and a second fills the gaps (always two writers were slower at c=32 and
/// faster at c=256: docs/benchmarks.md#intake). Other instances write batches of their own.
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

/// The intakes waiting for one database, and how many batches are being written.
#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    writers: usize,
    /// The niches its batches read last (PostgreSQL's plain batches rely on them, checked).
    known: Known,
}

type Shared = Arc<Mutex<Queue>>;

fn lock(queue: &Shared) -> std::sync::MutexGuard<'_, Queue> {
    queue
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How batches are written to one store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limits {
    /// The most batches written at once.
    writers: usize,
    /// The most intakes in one batch.
    most: usize,
    /// About the most bytes of questions in one batch (one intake at least).
    bytes: usize,
}

impl Limits {
    fn of(backend: DbBackend) -> Self {
        match backend {
            DbBackend::Postgres => Self {
                writers: POSTGRES_WRITERS,
                most: MOST_POSTGRES,
                bytes: BYTES_POSTGRES,
            },
            // One process writes the file: no socket between them.
            _ => Self {
                writers: 1,
                most: MOST,
                bytes: usize::MAX,
            },
        }
    }
}

/// Whether an intake just queued starts a writer: when none is writing, or when fewer than the
/// limit are and more intakes wait than one batch takes (those writing are behind).
fn starts_writer(writing: usize, waiting: usize, limits: Limits) -> bool {
    writing == 0 || (writing < limits.writers && waiting > limits.most)
}

/// How many of the waiting `jobs` (oldest first) the next batch takes: up to `limits.most`, and
/// while their questions' bytes stay within `limits.bytes`; one at least.
fn batch_len(jobs: &[Job], limits: Limits) -> usize {
    let mut bytes = 0usize;
    let mut take = 0;
    for job in jobs.iter().take(limits.most) {
        bytes = bytes.saturating_add(job.request.bytes());
        if take > 0 && bytes > limits.bytes {
            break;
        }
        take += 1;
    }
    take
}

/// The queue of the database `db` writes (a SQLite file, or a PostgreSQL database), shared by
/// every pool of this process that opens it; and how its batches are written.
fn queue_for(db: &Db) -> (Shared, Limits) {
    static QUEUES: OnceLock<Mutex<HashMap<String, Shared>>> = OnceLock::new();
    let limits = Limits::of(db.get_database_backend());
    let key = db.key();
    let queue = QUEUES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .entry(key)
        .or_default()
        .clone();
    (queue, limits)
}

/// Write `request` with whatever other intakes arrive meanwhile; its outcome once committed.
pub(super) async fn submit(
    db: &Db,
    hint: &ChangeHint,
    request: Request,
) -> Result<IntakeOutcome, ServiceError> {
    let (reply, outcome) = oneshot::channel();
    let (queue, limits) = queue_for(db);
    let start = {
        let mut waiting = lock(&queue);
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
    queue: Shared,
    counted_out: bool,
}

impl Drop for Writing {
    fn drop(&mut self) {
        if !self.counted_out {
            let mut queue = lock(&self.queue);
            queue.writers = queue.writers.saturating_sub(1);
        }
    }
}

/// Write batches until no intake waits.
async fn drain(db: Db, hint: ChangeHint, queue: Shared, limits: Limits) {
    let mut writing = Writing {
        queue,
        counted_out: false,
    };
    loop {
        let batch: Vec<Job> = {
            let mut waiting = lock(&writing.queue);
            if waiting.jobs.is_empty() {
                // Counted out under the same lock that saw the queue empty: an intake queued
                // after this finds a writer's place free and starts one.
                waiting.writers = waiting.writers.saturating_sub(1);
                writing.counted_out = true;
                return;
            }
            let take = batch_len(&waiting.jobs, limits);
            waiting.jobs.drain(..take).collect()
        };
        write_batch(&db, &hint, &writing.queue, batch).await;
    }
}

async fn write_batch(db: &Db, hint: &ChangeHint, queue: &Shared, batch: Vec<Job>) {
    let requests: Vec<&Request> = batch.iter().map(|job| &job.request).collect();
    let (mut settled, read) = write_plain(db, queue, &requests).await;
    let left: Vec<usize> = (0..settled.len())
        .filter(|&i| settled[i].is_none())
        .collect();
    if !left.is_empty() {
        let left_requests: Vec<&Request> = left.iter().map(|&i| requests[i]).collect();
        match write_together(db, &left_requests, read).await {
            Ok(outcomes) => {
                for (&i, outcome) in left.iter().zip(outcomes) {
                    settled[i] = Some(outcome);
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, intakes = left.len(), "an intake batch failed; writing its intakes one by one");
                for &i in &left {
                    settled[i] = Some(store_alone(db, hint, requests[i]).await);
                }
            }
        }
    }
    if settled
        .iter()
        .any(|o| matches!(o, Some(Ok(o)) if !o.duplicate))
    {
        hint.changed();
    }
    for (job, outcome) in batch.into_iter().zip(settled) {
        let outcome = outcome.unwrap_or_else(|| {
            Err(ServiceError::Internal(anyhow::anyhow!(
                "an intake of the batch was never written"
            )))
        });
        // A client that went away no longer waits; its question is stored all the same.
        let _ = job.reply.send(outcome);
    }
}

/// On PostgreSQL, if the batch is plain, its questions written in one statement ([`plain`]),
/// relying on the niches as the queue's batches read them last when it knows them all, or else
/// on the niches read now: each intake's outcome, `None` for those left to a transaction, and
/// the niches read when nothing was written (for that transaction to use). On SQLite, or when
/// the read or the statement fails, everything is left to the transaction.
async fn write_plain(
    db: &Db,
    queue: &Shared,
    requests: &[&Request],
) -> (Vec<plain::Settled>, Option<Niches>) {
    let none = || requests.iter().map(|_| None).collect();
    if db.get_database_backend() != DbBackend::Postgres {
        return (none(), None);
    }
    let known = lock(queue).known.niches_of(requests, Instant::now());
    if let Some(known) = known {
        match write_plain_with(db, requests, &known, true).await {
            Ok(Written::Settled(settled)) => return (settled, None),
            // Read again below: a transaction relies on no niche read before it.
            Ok(Written::NotPlain) => {}
            Ok(Written::Stale) => lock(queue).known.forget(&known),
            Err(()) => return (none(), None),
        }
    }
    // Read before any transaction, on a reader's connection: under read committed, a read
    // inside the transaction would see no more than this one (it locks nothing either way).
    let read = match load_niches(db.reads(), requests).await {
        Ok(read) => read,
        Err(err) => {
            tracing::warn!(error = %err, "reading an intake batch's niches failed");
            return (none(), None);
        }
    };
    lock(queue).known.remember(&read, Instant::now());
    match write_plain_with(db, requests, &read, false).await {
        Ok(Written::Settled(settled)) => (settled, None),
        Ok(Written::NotPlain) => (none(), Some(read)),
        // Changed since this very read: the transaction reads the niches itself.
        Ok(Written::Stale) => {
            lock(queue).known.forget(&read);
            (none(), None)
        }
        Err(()) => (none(), None),
    }
}

/// [`plain::write`], with the crash test's hook before its statement; a failure logged.
async fn write_plain_with(
    db: &Db,
    requests: &[&Request],
    read: &Niches,
    earlier: bool,
) -> Result<Written, ()> {
    #[cfg(feature = "test-hooks")]
    abort_if_asked();
    plain::write(db, requests, read, earlier)
        .await
        .map_err(|err| {
            tracing::warn!(error = %err, intakes = requests.len(), "a plain intake batch failed; writing it in a transaction");
        })
}

/// One transaction for `requests` (their niches `read` before it began, or read inside it):
/// every intake's outcome, or the error that rolled it back.
async fn write_together(
    db: &Db,
    requests: &[&Request],
    read: Option<Niches>,
) -> Result<Vec<Result<IntakeOutcome, ServiceError>>, ServiceError> {
    let txn = db.begin_write().await?;
    let mut created = Vec::with_capacity(requests.len());
    let outcomes = match write_all(&txn, requests, read, &mut created).await {
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

/// The crash test's hook: abort the process here, the batch written and not committed (or, for a
/// plain batch, its one statement not yet sent), when [`ABORT_BEFORE_COMMIT`] is set.
#[cfg(feature = "test-hooks")]
fn abort_if_asked() {
    static SET: OnceLock<bool> = OnceLock::new();
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

    /// A waiting intake whose context is `context` bytes long.
    fn job(context: usize) -> Job {
        let new = crate::domain::intake::parse_new_question(&serde_json::json!({
            "nicheSlug": "roofing",
            "externalId": "q",
            "title": "Which?",
            "question": "Which of the two?",
            "context": "x".repeat(context),
        }))
        .expect("a valid question");
        Job {
            request: Request {
                asker: crate::service::agents::registry::Asker::Default,
                new,
                now: chrono::Utc::now(),
            },
            reply: oneshot::channel().0,
        }
    }

    #[test]
    fn a_postgres_batch_stops_before_its_questions_outgrow_one_tls_record() {
        let postgres = Limits::of(DbBackend::Postgres);
        let small: Vec<Job> = (0..2 * MOST_POSTGRES).map(|_| job(40)).collect();
        assert_eq!(
            batch_len(&small, postgres),
            MOST_POSTGRES,
            "small ones: by count"
        );
        let large: Vec<Job> = (0..MOST_POSTGRES).map(|_| job(2_000)).collect();
        let take = batch_len(&large, postgres);
        assert!(
            (2..MOST_POSTGRES).contains(&take),
            "large ones: by bytes ({take})"
        );
        let bytes: usize = large[..take].iter().map(|j| j.request.bytes()).sum();
        assert!(bytes <= BYTES_POSTGRES, "{bytes}");
        let huge = vec![job(60_000), job(40)];
        assert_eq!(batch_len(&huge, postgres), 1, "one however large, alone");
        assert_eq!(batch_len(&[], postgres), 0);
        let sqlite = Limits::of(DbBackend::Sqlite);
        assert_eq!(
            batch_len(&large, sqlite),
            MOST_POSTGRES,
            "no byte limit on SQLite"
        );
    }

    #[test]
    fn a_texts_bytes_are_counted_as_json_writes_them() {
        for text in ["plain", "", "a \"quoted\" \\ path\n\ttab", "\u{1}\u{1f}é✓"] {
            let written = serde_json::to_string(text).expect("a string").len() - 2;
            assert_eq!(super::super::json_len(text), written, "{text:?}");
        }
    }

    #[test]
    fn sqlite_has_one_writer_however_many_wait() {
        let sqlite = Limits::of(DbBackend::Sqlite);
        assert_eq!(
            sqlite,
            Limits {
                writers: 1,
                most: MOST,
                bytes: usize::MAX,
            }
        );
        assert!(starts_writer(0, 1, sqlite));
        assert!(!starts_writer(1, 100 * MOST, sqlite));
    }
}
