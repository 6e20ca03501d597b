//! An agent asks (docs/contract.md#asking-a-question): store the question once, however many
//! times it is delivered.

use chrono::{DateTime, Duration, Utc};
use entity::agent_questions::{self, QuestionStatus, Urgency};
use entity::niches::NicheStatus;
use entity::{audit_log, niches};
use std::collections::{HashMap, HashSet};

use crate::db::{Db, WriteTxn, bulk};
use sea_orm::sea_query::{Expr, OnConflict, Query};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, NotSet,
    QueryFilter, QuerySelect, QueryTrait, TryInsertResult,
};
use serde_json::json;

use crate::domain::intake::{self, ExchangeKind, NewQuestion};
use crate::domain::ledger::Budget;
use crate::error::{Conflict, ServiceError};
use crate::live::ChangeHint;
use crate::service::agents::registry::Asker;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::money::budget;
use crate::service::reach::operator_hooks::{self, HookEvent, QuestionFacts};
use crate::service::{questions::escalation, reach};

mod batch;

/// What became of an intake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntakeOutcome {
    /// The stored question (new, or the one stored before).
    pub question_id: i64,
    /// Its current status.
    pub status: QuestionStatus,
    /// Whether it had been stored before under the same external id.
    pub duplicate: bool,
    /// The niche it belongs to.
    pub niche_id: i64,
    /// When it stops waiting.
    pub expires_at: DateTime<Utc>,
    /// The niche's budget after the intake.
    pub budget: Budget,
}

/// Why an intake did not store anything, for the intake metrics.
pub fn refusal_reason(err: &ServiceError) -> &'static str {
    match err {
        ServiceError::NotFound(_) => "unknown_niche",
        ServiceError::Conflict(Conflict::ExternalIdTaken) => "external_id_taken",
        ServiceError::Conflict(_) => "niche_closed",
        ServiceError::Forbidden(_) => "not_its_niche",
        ServiceError::BadInput(_) => "bad_input",
        ServiceError::OverBudget { .. } => "over_budget",
        _ => "error",
    }
}

/// Store `new` in its niche, or report the question already stored under its external id.
///
/// The database decides duplicates: the insert is `ON CONFLICT DO NOTHING` against the unique
/// (niche, external id) index, so 100 copies arriving at once store exactly one row.
///
/// A registered agent asks only in its niches: another niche is refused (403) before anything is
/// stored. The question records which agent asked, so its events go to that agent's endpoint.
///
/// The niche is read, and the question checked against it, inside the transaction that stores
/// the question: a niche archived or re-limited a moment before is seen as it is.
pub async fn receive_question(
    db: &Db,
    hint: &ChangeHint,
    asker: &Asker,
    new: NewQuestion,
    now: DateTime<Utc>,
) -> Result<IntakeOutcome, ServiceError> {
    batch::submit(
        db,
        hint,
        Request {
            asker: asker.clone(),
            new,
            now,
        },
    )
    .await
}

/// One intake as it arrived: parsed and signed, not yet checked against its niche.
#[derive(Debug)]
pub(crate) struct Request {
    asker: Asker,
    new: NewQuestion,
    now: DateTime<Utc>,
}

/// Check `request` against its niche (`None`: no such niche): what to store, or why nothing is.
fn check(niche: Option<&niches::Model>, request: &Request) -> Result<Store, ServiceError> {
    let Request { asker, new, now } = request;
    let niche = niche
        .cloned()
        .ok_or_else(|| ServiceError::NotFound(format!("no niche {}", describe(&new.niche))))?;
    if !asker.may_use_niche(niche.id) {
        return Err(Asker::not_your_niche(&niche.slug));
    }
    // Audited under its registered slug when it has one (the body's `agentId` is its own word).
    let actor = match asker {
        Asker::Default => Actor::Agent(new.agent_id.clone()),
        Asker::Registered { slug, .. } => Actor::Agent(Some(slug.clone())),
    };
    match niche.status {
        NicheStatus::Open | NicheStatus::Operated => {}
        NicheStatus::Draft => {
            return Err(Conflict::NicheClosed {
                slug: niche.slug,
                state: "a draft",
            }
            .into());
        }
        NicheStatus::Archived => {
            return Err(Conflict::NicheClosed {
                slug: niche.slug,
                state: "archived",
            }
            .into());
        }
    }

    // A task's limit is reserved exactly as a question's bounty is, within the same maximum.
    let (bounty, field) = match new.kind {
        ExchangeKind::Question => (
            new.bounty_minor.unwrap_or(niche.bounty_minor),
            "bountyMinor",
        ),
        ExchangeKind::Task => (new.budget_limit_minor.unwrap_or(0), "budgetLimitMinor"),
    };
    let bounty_ceiling = niche.max_bounty_minor.max(niche.bounty_minor);
    if bounty > bounty_ceiling {
        return Err(ServiceError::BadInput(format!(
            "{field} {bounty} is above this niche's maximum of {bounty_ceiling}"
        )));
    }
    let lifetime = new
        .expires_in_seconds
        .unwrap_or(niche.default_question_lifetime_secs)
        .clamp(intake::MIN_LIFETIME_SECS, intake::MAX_LIFETIME_SECS);
    Ok(Store {
        niche,
        asker: asker.agent_id(),
        actor,
        bounty,
        lifetime,
        now: *now,
    })
}

/// One intake, checked against its niche and ready to be written.
#[derive(Debug)]
struct Store {
    niche: niches::Model,
    /// The registered agent asking (none: the built-in default agent).
    asker: Option<i64>,
    /// Who the audit rows name.
    actor: Actor,
    bounty: i64,
    lifetime: i64,
    now: DateTime<Utc>,
}

/// Write one intake in a transaction of its own.
async fn store_alone(
    db: &Db,
    hint: &ChangeHint,
    request: &Request,
) -> Result<IntakeOutcome, ServiceError> {
    let txn = db.begin_write().await?;
    let mut created = Vec::with_capacity(1);
    let outcome = match write_all(&txn, &[request], &mut created).await {
        Ok(mut outcomes) => outcomes.pop().unwrap_or_else(|| {
            Err(ServiceError::Internal(anyhow::anyhow!(
                "an intake written alone had no outcome"
            )))
        }),
        Err(err) => Err(err),
    };
    match outcome {
        Ok(outcome) => {
            audit::record_all(&txn, created).await?;
            txn.commit().await?;
            if !outcome.duplicate {
                hint.changed();
            }
            Ok(outcome)
        }
        Err(err) => {
            txn.rollback().await?;
            Err(err)
        }
    }
}

/// Write `requests` inside `txn`, each exactly as it would be alone, in order: one outcome per
/// request, or the database error that spoils the transaction.
///
/// The round trips are shared: the niches they name are read in one query, and the new
/// questions (the first of each external id in the batch) are inserted in one statement. What
/// that statement did not insert — a question stored before, or a second copy in the same batch
/// — then goes through [`write`], which finds it (or, if the first copy was refused, stores it).
/// The niches are read inside the transaction, so each intake is checked against its niche as
/// the write finds it.
async fn write_all(
    txn: &WriteTxn,
    requests: &[&Request],
    created: &mut Vec<audit_log::ActiveModel>,
) -> Result<Vec<Result<IntakeOutcome, ServiceError>>, ServiceError> {
    let Niches {
        rows: niches,
        reach,
    } = load_niches(txn, requests).await?;
    let checked: Vec<Result<Store, ServiceError>> = requests
        .iter()
        .map(|request| check(niche_named(&niches, &request.new.niche), request))
        .collect();
    let mut inserted = insert_new(
        txn,
        checked
            .iter()
            .zip(requests)
            .filter_map(|(store, request)| Some((store.as_ref().ok()?, &request.new))),
    )
    .await?;
    let mut outcomes = Vec::with_capacity(requests.len());
    // The questions stored by this batch, by niche: who is to hear of them.
    let mut stored: Vec<(niches::Model, Vec<QuestionFacts>)> = Vec::new();
    for (store, request) in checked.into_iter().zip(requests) {
        let store = match store {
            Ok(store) => store,
            Err(refused) => {
                outcomes.push(Err(refused));
                continue;
            }
        };
        let new = &request.new;
        let first = new
            .external_id
            .as_ref()
            .and_then(|id| inserted.remove(&(store.niche.id, id.clone())));
        let outcome = match first {
            Some(question_id) => settle_new(txn, &store, new, question_id, created).await,
            None => write(txn, &store, new, created).await,
        };
        match outcome {
            Ok(outcome) => {
                if !outcome.duplicate {
                    let facts = QuestionFacts {
                        id: outcome.question_id,
                        title: new.title.clone(),
                        urgency: urgency_of(new.urgency),
                        expires_at: outcome.expires_at,
                    };
                    match stored.iter_mut().find(|(n, _)| n.id == store.niche.id) {
                        Some((_, facts_of)) => facts_of.push(facts),
                        None => stored.push((store.niche.clone(), vec![facts])),
                    }
                }
                outcomes.push(Ok(outcome));
            }
            // Refused (over budget, or another agent's external id), with nothing of it left in
            // the transaction.
            Err(refused @ (ServiceError::OverBudget { .. } | ServiceError::Conflict(_))) => {
                outcomes.push(Err(refused));
            }
            Err(err) => return Err(err),
        }
    }
    if let Some(now) = requests.first().map(|r| r.now) {
        let ids: Vec<i64> = stored
            .iter()
            .filter(|(niche, _)| reach.mail.contains(&niche.id))
            .flat_map(|(_, facts)| facts.iter().map(|f| f.id))
            .collect();
        reach::plan_for_new_questions(txn, &ids, now).await?;
        for (niche, facts) in stored.iter().filter(|(n, _)| reach.hooks.contains(&n.id)) {
            operator_hooks::enqueue(txn, HookEvent::Waiting, niche, facts, now).await?;
        }
        // A niche that routes its notifications holds back all but its first wave.
        for (niche, facts) in stored.iter().filter(|(n, _)| n.first_wave.is_some()) {
            for fact in facts {
                crate::service::questions::routing::first_wave(txn, niche, fact.id, now).await?;
            }
        }
    }
    Ok(outcomes)
}

fn urgency_of(urgency: intake::Urgency) -> Urgency {
    match urgency {
        intake::Urgency::Low => Urgency::Low,
        intake::Urgency::Normal => Urgency::Normal,
        intake::Urgency::High => Urgency::High,
    }
}

/// The niches a batch names, as one query read them.
#[derive(Default)]
struct Niches {
    rows: Vec<niches::Model>,
    reach: Reach,
}

/// The niches `requests` name, read in one query.
async fn load_niches(txn: &WriteTxn, requests: &[&Request]) -> Result<Niches, ServiceError> {
    let (mut slugs, mut ids) = (Vec::new(), Vec::new());
    for request in requests {
        match &request.new.niche {
            intake::NicheRef::Slug(slug) => slugs.push(slug.clone()),
            intake::NicheRef::Id(id) => ids.push(*id),
        }
    }
    slugs.sort_unstable();
    slugs.dedup();
    ids.sort_unstable();
    ids.dedup();
    // Only the lists that name something: an empty `IN ()` is written as a comparison of two
    // bound values, which PostgreSQL cannot fold in a cached generic plan, so it planned the read
    // afresh for every batch (a quarter of a millisecond each, with its two `EXISTS`). Named by
    // slugs alone, the usual case, the read is planned once a connection.
    let mut named = Condition::any();
    if !slugs.is_empty() {
        named = named.add(niches::Column::Slug.is_in(slugs));
    }
    if !ids.is_empty() {
        named = named.add(niches::Column::Id.is_in(ids));
    }
    let rows = niches::Entity::find()
        .filter(named)
        .column_as(Expr::cust(HAS_HOOKS), "reach_hooks")
        .column_as(Expr::cust(HAS_READERS), "reach_mail")
        .into_model::<NicheRow>()
        .all(txn)
        .await?;
    let mut read = Niches::default();
    for row in rows {
        if row.hooks {
            read.reach.hooks.insert(row.niche.id);
        }
        if row.mail {
            read.reach.mail.insert(row.niche.id);
        }
        read.rows.push(row.niche);
    }
    Ok(read)
}

/// Whether a niche has a live operator webhook: the batch writes its events only then.
const HAS_HOOKS: &str = "EXISTS (SELECT 1 FROM operator_webhooks w \
     WHERE w.niche_id = niches.id AND w.revoked_at IS NULL)";

/// Whether anyone of a niche may be mailed about it (an active operator or specialist with a
/// verified address): the batch writes notifications only then.
const HAS_READERS: &str = "EXISTS (SELECT 1 FROM niche_members m \
     JOIN notification_settings s ON s.user_id = m.user_id \
     WHERE m.niche_id = niches.id AND m.status = 'active' AND s.verified_email IS NOT NULL)";

/// Which of a batch's niches someone is to hear of (by mail, by webhook).
#[derive(Debug, Default)]
struct Reach {
    hooks: HashSet<i64>,
    mail: HashSet<i64>,
}

/// A niche as the batch reads it, with whether anyone is to hear of its questions.
struct NicheRow {
    niche: niches::Model,
    hooks: bool,
    mail: bool,
}

impl sea_orm::FromQueryResult for NicheRow {
    fn from_query_result(row: &sea_orm::QueryResult, pre: &str) -> Result<Self, sea_orm::DbErr> {
        Ok(Self {
            niche: niches::Model::from_query_result(row, pre)?,
            hooks: row.try_get(pre, "reach_hooks")?,
            mail: row.try_get(pre, "reach_mail")?,
        })
    }
}

fn niche_named<'a>(
    niches: &'a [niches::Model],
    name: &intake::NicheRef,
) -> Option<&'a niches::Model> {
    niches.iter().find(|niche| match name {
        intake::NicheRef::Slug(slug) => niche.slug == *slug,
        intake::NicheRef::Id(id) => niche.id == *id,
    })
}

/// Insert, in one statement, the first question of each (niche, external id) among `stores`;
/// the ids of those it inserted (a question stored before is skipped by the database).
async fn insert_new<'a>(
    txn: &WriteTxn,
    stores: impl Iterator<Item = (&'a Store, &'a NewQuestion)>,
) -> Result<HashMap<(i64, String), i64>, ServiceError> {
    let mut seen = HashSet::new();
    let rows: Vec<agent_questions::ActiveModel> = stores
        .filter(|(store, new)| {
            new.external_id
                .as_ref()
                .is_some_and(|id| seen.insert((store.niche.id, id.clone())))
        })
        .map(|(store, new)| question_row(store, new))
        .collect();
    if rows.is_empty() {
        return Ok(HashMap::new());
    }
    let inserted = if txn.get_database_backend() == DbBackend::Postgres {
        // One statement whatever the batch's size (see `db::bulk`), unless its questions are
        // large: then as many as keep each within `INSERT_BYTES`. The same conflict target and
        // returned columns as below.
        let mut inserted = Vec::with_capacity(rows.len());
        for statement in bulk::insert_rows_within(
            &rows,
            INSERT_BYTES,
            &format!("{ON_EXTERNAL_ID} RETURNING id, niche_id, external_id"),
        )? {
            inserted.extend(txn.query_all_raw(statement).await?);
        }
        inserted
    } else {
        let mut insert = agent_questions::Entity::insert_many(rows)
            .on_conflict(on_external_id())
            .into_query();
        insert.returning(Query::returning().columns([
            agent_questions::Column::Id,
            agent_questions::Column::NicheId,
            agent_questions::Column::ExternalId,
        ]));
        txn.query_all(&insert).await?
    };
    Ok(stored_ids(inserted)?)
}

/// The questions an insert returned (`id, niche_id, external_id`), by (niche, external id).
fn stored_ids(
    rows: Vec<sea_orm::QueryResult>,
) -> Result<HashMap<(i64, String), i64>, sea_orm::DbErr> {
    let mut ids = HashMap::with_capacity(rows.len());
    for row in rows {
        let id: i64 = row.try_get("", "id")?;
        let niche_id: i64 = row.try_get("", "niche_id")?;
        let external_id: Option<String> = row.try_get("", "external_id")?;
        if let Some(external_id) = external_id {
            ids.insert((niche_id, external_id), id);
        }
    }
    Ok(ids)
}

/// The most bytes of questions, as their JSON parameter is written, that one insert carries on
/// PostgreSQL; a batch of larger ones is inserted in several statements. The driver sends a
/// statement over TLS one 16 KiB record a write and does not set `TCP_NODELAY`, so a larger
/// one waits out the server's delayed acknowledgement, about 40 ms: batches of 1 KiB questions
/// took a fifth of the rate they took kept under 12 KiB (docs/benchmarks.md#intake).
const INSERT_BYTES: usize = 12 * 1024;

/// The bulk insert's conflict clause on PostgreSQL: stop at the unique (niche, external id)
/// index, as [`on_external_id`] does.
const ON_EXTERNAL_ID: &str =
    "ON CONFLICT (niche_id, external_id) WHERE external_id IS NOT NULL DO NOTHING";

/// What a new question's audit row says happened, and to what.
const CREATED_ACTION: &str = "question.created";
const CREATED_SUBJECT: &str = "question";

/// The unique (niche, external id) index the inserts stop at.
fn on_external_id() -> OnConflict {
    OnConflict::columns([
        agent_questions::Column::NicheId,
        agent_questions::Column::ExternalId,
    ])
    .target_and_where(agent_questions::Column::ExternalId.is_not_null())
    .do_nothing()
    .to_owned()
}

fn question_row(store: &Store, new: &NewQuestion) -> agent_questions::ActiveModel {
    let now = store.now;
    agent_questions::ActiveModel {
        id: NotSet,
        niche_id: Set(store.niche.id),
        external_id: Set(new.external_id.clone()),
        agent_id: Set(new.agent_id.clone()),
        registered_agent_id: Set(store.asker),
        title: Set(new.title.clone()),
        question: Set(new.question.clone()),
        context: Set(new.context.clone()),
        options: Set(json!(new.options)),
        urgency: Set(urgency_of(new.urgency)),
        urgency_rank: Set(new.urgency.rank()),
        related_resource_ids: Set(json!(new.related_resource_ids)),
        status: Set(QuestionStatus::Open),
        bounty_minor: Set(store.bounty),
        research_round: Set(0),
        needs_context_round: Set(None),
        expires_at: Set(now + Duration::seconds(store.lifetime)),
        created_at: Set(now),
        answered_at: Set(None),
        updated_at: Set(now),
        escalate_at: Set(escalation::first_due(
            &store.niche,
            urgency_of(new.urgency),
            now,
        )),
        escalation_step: Set(0),
        kind: Set(match new.kind {
            ExchangeKind::Question => agent_questions::ExchangeKind::Question,
            ExchangeKind::Task => agent_questions::ExchangeKind::Task,
        }),
        deliverable: Set(new.deliverable.clone()),
        answers_wanted: Set(new.answers.wanted),
        agreement_bps: Set(new.answers.agreement_bps),
        withdrawn_at: Set(None),
        answers_in: Set(0),
    }
}

/// Write one intake inside `txn`: the question, or find the one stored before under its
/// external id (before this batch, or earlier in it).
async fn write(
    txn: &WriteTxn,
    store: &Store,
    new: &NewQuestion,
    created: &mut Vec<audit_log::ActiveModel>,
) -> Result<IntakeOutcome, ServiceError> {
    let inserted = agent_questions::Entity::insert(question_row(store, new))
        .on_conflict(on_external_id())
        .try_insert()
        .exec(txn)
        .await?;
    match inserted {
        TryInsertResult::Inserted(result) => {
            settle_new(txn, store, new, result.last_insert_id, created).await
        }
        TryInsertResult::Conflicted | TryInsertResult::Empty => {
            let existing = agent_questions::Entity::find()
                .filter(agent_questions::Column::NicheId.eq(store.niche.id))
                .filter(agent_questions::Column::ExternalId.eq(new.external_id.clone()))
                .one(txn)
                .await?
                .ok_or_else(|| {
                    ServiceError::Internal(anyhow::anyhow!(
                        "insert conflicted but no question has external id {:?}",
                        new.external_id
                    ))
                })?;
            // The external id is unique per niche, whoever asked: another agent's question is
            // neither shown nor touched.
            if existing.registered_agent_id != store.asker {
                return Err(Conflict::ExternalIdTaken.into());
            }
            Ok(IntakeOutcome {
                question_id: existing.id,
                status: existing.status,
                duplicate: true,
                niche_id: store.niche.id,
                expires_at: existing.expires_at,
                budget: budget::budget_of(txn, &store.niche, store.now).await?,
            })
        }
    }
}

/// A question just inserted as `question_id`: reserve its bounty and add its audit rows to
/// `created`, for the caller to append with the others of its transaction in one statement
/// before it commits. A bounty the budget cannot cover leaves nothing behind (the question row
/// is removed again) and answers 402, so the transaction may go on to commit other intakes.
async fn settle_new(
    txn: &WriteTxn,
    store: &Store,
    new: &NewQuestion,
    question_id: i64,
    created: &mut Vec<audit_log::ActiveModel>,
) -> Result<IntakeOutcome, ServiceError> {
    let Store {
        niche,
        actor,
        bounty,
        now,
        ..
    } = store;
    let (bounty, now) = (*bounty, *now);
    // A bounty is checked and reserved by one conditional update of the niche's balance (the
    // limit as it is now, whoever changed it); a question without one touches no budget at all.
    let budget = if bounty > 0 {
        if !budget::try_reserve(txn, niche.id, question_id, bounty, now).await? {
            agent_questions::Entity::delete_by_id(question_id)
                .exec(txn)
                .await?;
            let refused = budget::budget_of(txn, niche, now).await?;
            return Err(budget::over_budget(&refused, now));
        }
        created.push(audit::row(
            AuditEntry {
                actor,
                action: "budget.reserved",
                subject_type: "budget",
                subject_id: question_id,
                niche_id: Some(niche.id),
                detail: json!({ "questionId": question_id, "amountMinor": bounty }),
            },
            now,
        ));
        budget::budget_of(txn, niche, now).await?
    } else {
        // As the niche's row was read for this intake.
        budget::balance_of(niche, now)
    };
    created.push(created_row(store, new, question_id));
    Ok(stored_outcome(store, question_id, budget))
}

/// The `question.created` audit row of `new`, stored as `question_id`.
fn created_row(store: &Store, new: &NewQuestion, question_id: i64) -> audit_log::ActiveModel {
    audit::row(
        AuditEntry {
            actor: &store.actor,
            action: CREATED_ACTION,
            subject_type: CREATED_SUBJECT,
            subject_id: question_id,
            niche_id: Some(store.niche.id),
            detail: json!({
                "externalId": new.external_id,
                "bountyMinor": store.bounty,
                "kind": new.kind.as_str(),
            }),
        },
        store.now,
    )
}

/// What an intake stored as `question_id` answers, the niche's budget then being `budget`.
fn stored_outcome(store: &Store, question_id: i64, budget: Budget) -> IntakeOutcome {
    IntakeOutcome {
        question_id,
        status: QuestionStatus::Open,
        duplicate: false,
        niche_id: store.niche.id,
        expires_at: store.now + Duration::seconds(store.lifetime),
        budget,
    }
}

fn describe(niche: &intake::NicheRef) -> String {
    match niche {
        intake::NicheRef::Slug(slug) => format!("'{slug}'"),
        intake::NicheRef::Id(id) => format!("with id {id}"),
    }
}
