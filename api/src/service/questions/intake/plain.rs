//! A plain batch on PostgreSQL: its questions and their audit rows in one statement that is its
//! own transaction (docs/architecture.md#intake-group-commit).
//!
//! A batch written in a transaction costs five round trips to the database — `BEGIN`, the read of
//! its niches, the insert of its questions, the insert of their audit rows, `COMMIT` — and on a
//! busy machine each is a wait for the server's process and then for askloop's to be scheduled
//! again, not only the server's work (docs/benchmarks.md#intake). Most batches need nothing of a
//! transaction but that the questions and their `question.created` rows are stored together: no
//! bounty to reserve, nobody to mail or call, no wave to hold back. Such a batch is written as one
//! statement — the questions' insert, and in the same statement (a data-modifying `WITH`) the audit
//! row of each question it stored — which PostgreSQL commits when it ends: one round trip, two when
//! its niches are read first. An intake the statement did not store (its external id stored before,
//! or a second copy in the same batch) is left to a transaction of the usual kind, which finds the
//! question stored before, exactly as it would have inside one.
//!
//! The niches need not have been read for this batch: a writer keeps those it read last
//! (`known`), and a batch of niches it knows skips the read. Either way the statement checks,
//! before it inserts anything, that every niche it relies on is still the row that was read
//! (PostgreSQL's row version, `xmin`, which any change to the row moves) and still has no one to
//! hear of its questions; if one is not, it inserts nothing and says so ([`Written::Stale`]), and
//! the batch reads its niches again. What a niche says — whether it is open, its default bounty,
//! its questions' lifetime — is therefore never older than the statement that relies on it.

use std::collections::HashSet;

use entity::{agent_questions, niches};
use sea_orm::sea_query::Value;
use sea_orm::{ActiveValue, DbErr, Statement};
use serde_json::Value as Json;

use super::{
    CREATED_ACTION, CREATED_SUBJECT, HAS_HOOKS, HAS_READERS, IntakeOutcome, Niches, ON_EXTERNAL_ID,
    ROW_VERSION, Request, Store, check, created_row, niche_named, question_row, stored_ids,
    stored_outcome,
};
use crate::db::{Db, bulk};
use crate::error::ServiceError;
use crate::service::money::budget;

/// One intake's outcome, or `None` when it is left to a transaction.
pub(super) type Settled = Option<Result<IntakeOutcome, ServiceError>>;

/// What [`write`] did.
pub(super) enum Written {
    /// The batch is not plain: nothing was written.
    NotPlain,
    /// A niche is not as it was read (or, read earlier, would refuse an intake): nothing was
    /// written, and the niches are to be read again.
    Stale,
    /// Each intake's outcome (a refusal included), or `None` for one left to a transaction.
    Settled(Vec<Settled>),
}

/// Write `requests`, whose niches are `read` (`earlier`: read for an earlier batch, not this
/// one), if the batch is plain (see the module).
pub(super) async fn write(
    db: &Db,
    requests: &[&Request],
    read: &Niches,
    earlier: bool,
) -> Result<Written, ServiceError> {
    let checked: Vec<Result<Store, ServiceError>> = requests
        .iter()
        .map(|request| check(niche_named(&read.rows, &request.new.niche), request))
        .collect();
    // Only a niche read for this batch refuses: one read earlier may have been opened since.
    if earlier && checked.iter().any(Result::is_err) {
        return Ok(Written::Stale);
    }
    if !checked
        .iter()
        .zip(requests)
        .all(|(store, request)| match store {
            Ok(store) => is_plain(store, request, read),
            Err(_) => true,
        })
    {
        return Ok(Written::NotPlain);
    }
    // The version of each niche the batch relies on, for the statement to check.
    let mut relied = HashSet::new();
    let mut versions = Vec::new();
    for store in checked.iter().flatten() {
        if relied.insert(store.niche.id) {
            let Some(version) = read.versions.get(&store.niche.id) else {
                return Ok(Written::Stale);
            };
            versions.push(Json::Array(vec![
                Json::from(store.niche.id),
                Json::from(version.as_str()),
            ]));
        }
    }
    // The first question of each (niche, external id) is inserted; a second copy waits.
    let mut first = HashSet::new();
    let mut questions = Vec::new();
    let mut audits = Vec::new();
    let mut takes = Vec::with_capacity(requests.len());
    for (store, request) in checked.iter().zip(requests) {
        let takes_part = match store {
            Ok(store) => {
                let key = (store.niche.id, request.new.external_id.clone());
                let fresh = first.insert(key);
                if fresh {
                    questions.push(question_row(store, &request.new));
                    audits.push(audit_of(store, request)?);
                }
                fresh
            }
            Err(_) => false,
        };
        takes.push(takes_part);
    }
    // Nothing to store (every intake refused): their answers need no statement at all.
    let rows = if questions.is_empty() {
        Vec::new()
    } else {
        let rows = db
            .write_alone(statement(&questions, audits, versions)?)
            .await?;
        let as_read = match rows.first() {
            Some(row) => row.try_get::<bool>("", "as_read")?,
            None => false,
        };
        if !as_read {
            return Ok(Written::Stale);
        }
        rows
    };
    let stored = stored_ids(rows)?;
    let mut settled = Vec::with_capacity(requests.len());
    for ((store, request), took) in checked.into_iter().zip(requests).zip(takes) {
        settled.push(match store {
            Err(refused) => Some(Err(refused)),
            Ok(store) => took
                .then_some(request.new.external_id.as_ref())
                .flatten()
                .and_then(|external_id| stored.get(&(store.niche.id, external_id.clone())))
                .map(|&question_id| {
                    let budget = budget::balance_of(&store.niche, store.now);
                    Ok(stored_outcome(&store, question_id, budget))
                }),
        });
    }
    Ok(Written::Settled(settled))
}

/// Whether `store` needs nothing of a transaction but its question and its audit row: an
/// external id (without one, each question is inserted alone), no bounty or task limit to
/// reserve, no one of its niche to mail or call, no first wave.
fn is_plain(store: &Store, request: &Request, read: &Niches) -> bool {
    let niche: &niches::Model = &store.niche;
    request.new.external_id.is_some()
        && store.bounty == 0
        && niche.first_wave.is_none()
        && !read.reach.mail.contains(&niche.id)
        && !read.reach.hooks.contains(&niche.id)
}

/// The audit row of `request`'s question, as the statement joins it to the question it stored:
/// `[niche id, external id, actor, detail]`. The rest of the row is the same for every question
/// (its action and subject type, bound once) or is the question's (its id, niche and time).
fn audit_of(store: &Store, request: &Request) -> Result<Json, DbErr> {
    // The row a transaction would append; its subject is the id the insert draws.
    let row = created_row(store, &request.new, 0);
    Ok(Json::Array(vec![
        Json::from(store.niche.id),
        Json::from(request.new.external_id.clone()),
        bulk::json_of(set(row.actor)?, "actor")?,
        bulk::json_of(set(row.detail)?, "detail")?,
    ]))
}

/// The value of a column the row sets.
fn set<T>(value: ActiveValue<T>) -> Result<Value, DbErr>
where
    T: Into<Value> + sea_orm::sea_query::Nullable,
{
    match value {
        ActiveValue::Set(value) | ActiveValue::Unchanged(value) => Ok(value.into()),
        ActiveValue::NotSet => Err(DbErr::Custom(
            "a question's audit row leaves a column unset".into(),
        )),
    }
}

/// The questions' insert and, in the same statement, the `question.created` row of each
/// question it stored, in the questions' order, at the question's time: what a transaction
/// appends for them ([`created_row`]). Both only if every niche of `versions` (`[id, version]`)
/// is still the row that was read and has no one to hear of its questions. It returns whether
/// they were (`as_read`), and each stored question's id, niche and external id (one row with
/// no question when it stored none).
fn statement(
    questions: &[agent_questions::ActiveModel],
    audits: Vec<Json>,
    versions: Vec<Json>,
) -> Result<Statement, DbErr> {
    let insert = bulk::insert_rows_where(
        questions,
        Some("(SELECT as_read FROM g)"),
        &format!("{ON_EXTERNAL_ID} RETURNING id, niche_id, external_id, created_at"),
    )?;
    let mut values = insert.values.map(|v| v.0).unwrap_or_default();
    values.push(Value::String(Some(Json::Array(audits).to_string())));
    values.push(Value::from(CREATED_ACTION));
    values.push(Value::from(CREATED_SUBJECT));
    values.push(Value::String(Some(Json::Array(versions).to_string())));
    let sql = format!(
        "WITH g AS (SELECT NOT EXISTS (SELECT 1 FROM jsonb_array_elements($5::jsonb) AS c(v) \
         LEFT JOIN niches ON niches.id = (c.v->>0)::bigint \
         WHERE niches.id IS NULL OR {ROW_VERSION} <> c.v->>1 OR {HAS_HOOKS} OR {HAS_READERS}) \
         AS as_read), \
         q AS ({}), \
         a AS (INSERT INTO audit_log (actor, action, subject_type, subject_id, niche_id, detail, \
         created_at) SELECT e.v->>2, $3, $4, q.id::text, q.niche_id, (e.v->>3)::json, \
         q.created_at FROM q JOIN jsonb_array_elements($2::jsonb) AS e(v) \
         ON (e.v->>0)::bigint = q.niche_id AND e.v->>1 = q.external_id ORDER BY q.id) \
         SELECT g.as_read, q.id, q.niche_id, q.external_id FROM g LEFT JOIN q ON true",
        insert.sql
    );
    Ok(Statement::from_sql_and_values(
        sea_orm::DbBackend::Postgres,
        sql,
        values,
    ))
}
