//! Reuse pays the contributor (docs/contract.md#knowledge): an agent that relies on a current
//! knowledge entry instead of asking again records a reuse, and so does an operator who settles
//! a question by pointing to one. Each reuse is a row of the reuse ledger (`knowledge_reuses`,
//! zero-amount when the niche's reuse is free), an audit row, and — when it cost something — a
//! charge against the niche's budget (402 when the budget cannot cover it) booked as revenue
//! with the entry's author as the contributor. When the entry is retracted every reuse of it is
//! given back: a `refund` row, the budget's spending lowered, the author's part reversed (or
//! clawed back once paid).

use chrono::{DateTime, Utc};
use entity::knowledge_entries::{self, KnowledgeStatus};
use entity::knowledge_reuses::{self, ReuseKind};
use entity::niches;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet, QueryFilter, QueryOrder,
    QuerySelect, TryInsertResult,
};
use serde_json::json;
use std::collections::HashMap;

use crate::db::{Db, WriteTxn};
use crate::domain::ledger::month_of;
use crate::error::{Conflict, ServiceError};
use crate::service::agents::registry::Asker;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::{money::budget, money::revenue, money::scores, money::standing};

/// A reuse as an agent sends it, checked at the edge (the wire crate's typed request).
pub use askloop_wire::knowledge::NewReuse;

/// A reuse as recorded, with the entry it relied on as it is now.
#[derive(Debug, Clone)]
pub struct Reused {
    /// The reuse row.
    pub reuse: knowledge_reuses::Model,
    /// The entry.
    pub entry: knowledge_entries::Model,
    /// Whether the same external id had been recorded before.
    pub duplicate: bool,
    /// Whether the reuse was given back (its entry retracted).
    pub refunded: bool,
}

/// Who relied on an entry, and how.
#[derive(Debug, Clone, Copy)]
struct Reliance<'a> {
    agent_id: Option<i64>,
    external_id: Option<&'a str>,
    question_id: Option<i64>,
    answer_id: Option<i64>,
}

/// An agent relies on entry `new.entry_id`: 404 for no such entry, 403 for a niche it may not
/// ask in, 409 `EXTERNAL_ID_TAKEN` for another agent's external id, 409 `KNOWLEDGE_NOT_CURRENT`
/// for an entry no longer current, 402 when the budget cannot cover the niche's reuse price. The
/// same external id again returns the first reuse, whatever became of the entry since.
pub async fn reuse(
    db: &Db,
    asker: &Asker,
    new: &NewReuse,
    now: DateTime<Utc>,
) -> Result<Reused, ServiceError> {
    let entry = knowledge_entries::Entity::find_by_id(new.entry_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("no knowledge entry {}", new.entry_id)))?;
    let niche = niches::Entity::find_by_id(entry.niche_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("an entry without its niche")))?;
    if !asker.may_use_niche(niche.id) {
        return Err(Asker::not_your_niche(&niche.slug));
    }
    if let Some(earlier) = recorded(db, asker, niche.id, &new.external_id).await? {
        return Ok(earlier);
    }
    if entry.status != KnowledgeStatus::Current {
        return Err(Conflict::KnowledgeNotCurrent.into());
    }
    let txn = db.begin_write().await?;
    // The price and the entry as the writing transaction sees them.
    let niche = niches::Entity::find_by_id(niche.id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("niche vanished")))?;
    // Locked until this reuse commits: a retraction cannot read the reuses between this check
    // and the reuse's row (docs/contract.md#knowledge).
    if current_for_update(&txn, entry.id).await?.is_none() {
        txn.rollback().await?;
        return Err(Conflict::KnowledgeNotCurrent.into());
    }
    let price = niche.reuse_price_minor;
    if !budget::charge_reuse(&txn, niche.id, price, now).await? {
        let state = budget::budget_of(&txn, &niche, now).await?;
        txn.rollback().await?;
        return Err(budget::over_budget(&state, now));
    }
    let reliance = Reliance {
        agent_id: asker.agent_id(),
        external_id: Some(&new.external_id),
        question_id: None,
        answer_id: None,
    };
    let actor = match asker {
        Asker::Default => Actor::Agent(None),
        Asker::Registered { slug, .. } => Actor::Agent(Some(slug.clone())),
    };
    let Some(reuse) = book(&txn, &niche, &entry, reliance, price, false, &actor, now).await? else {
        // Another call with the same external id got there first.
        txn.rollback().await?;
        return recorded(db, asker, niche.id, &new.external_id)
            .await?
            .ok_or_else(|| {
                ServiceError::Internal(anyhow::anyhow!("a reuse conflict without a row"))
            });
    };
    txn.commit().await?;
    Ok(Reused {
        reuse,
        entry,
        duplicate: false,
        refunded: false,
    })
}

/// Entry `entry_id` if it is current, read in `txn` so that no status change can pass between
/// this read and the transaction's commit: on PostgreSQL the row is locked (`FOR UPDATE`), so a
/// retraction or supersession either committed before (and this reads its status) or waits for
/// this transaction (and its refund pass then sees what this one wrote); SQLite's one writer
/// already orders them. Every write that relies on an entry being current (a reuse, a question
/// settled from it) reads it here.
pub async fn current_for_update(
    txn: &WriteTxn,
    entry_id: i64,
) -> Result<Option<knowledge_entries::Model>, ServiceError> {
    let mut find = knowledge_entries::Entity::find_by_id(entry_id);
    if txn.get_database_backend() == sea_orm::DbBackend::Postgres {
        find = find.lock_exclusive();
    }
    Ok(find
        .one(txn)
        .await?
        .filter(|e| e.status == KnowledgeStatus::Current))
}

/// The reuse recorded under `external_id` in the niche, if any: another agent's is 409.
async fn recorded<C: ConnectionTrait>(
    conn: &C,
    asker: &Asker,
    niche_id: i64,
    external_id: &str,
) -> Result<Option<Reused>, ServiceError> {
    let Some(reuse) = knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::NicheId.eq(niche_id))
        .filter(knowledge_reuses::Column::Kind.eq(ReuseKind::Reuse))
        .filter(knowledge_reuses::Column::ExternalId.eq(external_id))
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    if reuse.agent_id != asker.agent_id() {
        return Err(Conflict::ExternalIdTaken.into());
    }
    let entry = knowledge_entries::Entity::find_by_id(reuse.entry_id)
        .one(conn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("a reuse without its entry")))?;
    let refunded = refund_of(conn, reuse.id).await?.is_some();
    Ok(Some(Reused {
        reuse,
        entry,
        duplicate: true,
        refunded,
    }))
}

/// The refund of reuse `reuse_id`, if it was given back.
async fn refund_of<C: ConnectionTrait>(
    conn: &C,
    reuse_id: i64,
) -> Result<Option<knowledge_reuses::Model>, ServiceError> {
    Ok(knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::Refunds.eq(reuse_id))
        .one(conn)
        .await?)
}

/// Credit entry `entry`'s author for a question settled by pointing to it, inside the answer's
/// transaction: a reuse by the question's agent, costing the niche's reuse price up to the
/// question's bounty (whose reservation the caller released in the same transaction, so it is
/// covered), the author's part `held` while the pointer waits for review. The reuse row.
#[expect(
    clippy::too_many_arguments,
    reason = "the answer's parts, each from its caller"
)]
pub async fn credit_pointer(
    txn: &WriteTxn,
    niche: &niches::Model,
    entry: &knowledge_entries::Model,
    question: &entity::agent_questions::Model,
    answer_id: i64,
    held: bool,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<knowledge_reuses::Model, ServiceError> {
    let price = Ord::max(Ord::min(niche.reuse_price_minor, question.bounty_minor), 0);
    budget::charge_reserved_reuse(txn, niche.id, price, now).await?;
    let reliance = Reliance {
        agent_id: question.registered_agent_id,
        external_id: None,
        question_id: Some(question.id),
        answer_id: Some(answer_id),
    };
    book(txn, niche, entry, reliance, price, held, actor, now)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("an answer credited twice")))
}

/// The pointer answer `answer_id` was verified: the author's held credit from its reuse becomes
/// owed. The allocations moved.
pub async fn release_for_answer(
    txn: &WriteTxn,
    answer_id: i64,
    now: DateTime<Utc>,
) -> Result<Vec<i64>, ServiceError> {
    let events: Vec<i64> = knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::AnswerId.eq(answer_id))
        .filter(knowledge_reuses::Column::Kind.eq(ReuseKind::Reuse))
        .all(txn)
        .await?
        .into_iter()
        .filter_map(|r| r.revenue_event_id)
        .collect();
    let mut moved = Vec::new();
    for event in events {
        moved.extend(revenue::release_held_event(txn, event, now).await?);
    }
    Ok(moved)
}

/// Write a reuse: the revenue for the author (when it cost something), the ledger row and its
/// audit row. `None` when the reuse was recorded already (its external id or answer taken).
#[expect(
    clippy::too_many_arguments,
    reason = "one reuse's parts, each from its caller"
)]
async fn book(
    txn: &WriteTxn,
    niche: &niches::Model,
    entry: &knowledge_entries::Model,
    reliance: Reliance<'_>,
    amount: i64,
    held: bool,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Option<knowledge_reuses::Model>, ServiceError> {
    let revenue_event_id = if amount > 0 {
        let ladder = scores::ladder(txn).await?;
        let share = standing::niche_shares(txn, niche.id, &ladder)
            .await?
            .into_iter()
            .find(|(user, _)| *user == entry.answered_by)
            .map_or(0, |(_, bps)| bps);
        let external_id = format!(
            "{}:reuse:{}",
            revenue::BOUNTY_SOURCE,
            uuid::Uuid::new_v4().simple()
        );
        revenue::book_reuse(
            txn,
            niche,
            &external_id,
            (entry.answered_by, share),
            amount,
            held,
            now,
        )
        .await?
    } else {
        None
    };
    let conflict = if reliance.external_id.is_some() {
        OnConflict::columns([
            knowledge_reuses::Column::NicheId,
            knowledge_reuses::Column::ExternalId,
        ])
        .do_nothing()
        .to_owned()
    } else {
        OnConflict::column(knowledge_reuses::Column::AnswerId)
            .do_nothing()
            .to_owned()
    };
    let inserted = knowledge_reuses::Entity::insert(knowledge_reuses::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        entry_id: Set(entry.id),
        kind: Set(ReuseKind::Reuse),
        agent_id: Set(reliance.agent_id),
        external_id: Set(reliance.external_id.map(str::to_owned)),
        question_id: Set(reliance.question_id),
        answer_id: Set(reliance.answer_id),
        amount_minor: Set(amount),
        month: Set(month_of(now)),
        revenue_event_id: Set(revenue_event_id),
        refunds: Set(None),
        created_at: Set(now),
    })
    .on_conflict(conflict)
    .try_insert()
    .exec(txn)
    .await?;
    let TryInsertResult::Inserted(result) = inserted else {
        return Ok(None);
    };
    let reuse = knowledge_reuses::Entity::find_by_id(result.last_insert_id)
        .one(txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("a reuse vanished")))?;
    audit::record(
        txn,
        AuditEntry {
            actor,
            action: "knowledge.reused",
            subject_type: "knowledge_entry",
            subject_id: entry.id,
            niche_id: Some(niche.id),
            detail: json!({
                "reuseId": reuse.id,
                "externalId": reuse.external_id,
                "questionId": reuse.question_id,
                "amountMinor": amount,
                "author": entry.answered_by,
            }),
        },
        now,
    )
    .await?;
    Ok(Some(reuse))
}

/// Every reuse of entry `entry_id` (not the refunds), oldest first: who relied on it.
pub async fn reuses_of<C: ConnectionTrait>(
    conn: &C,
    entry_id: i64,
) -> Result<Vec<knowledge_reuses::Model>, ServiceError> {
    Ok(knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::EntryId.eq(entry_id))
        .filter(knowledge_reuses::Column::Kind.eq(ReuseKind::Reuse))
        .order_by_asc(knowledge_reuses::Column::Id)
        .all(conn)
        .await?)
}

/// Give back every reuse of a retracted entry, in the retraction's transaction: a refund row
/// for each reuse not given back yet (once: a refund names its reuse, uniquely), the budget's
/// spending lowered in the reuse's month, and what the reuse paid the author reversed or, once
/// paid out, clawed back. The reuses given back.
pub async fn refund_all(
    txn: &WriteTxn,
    entry: &knowledge_entries::Model,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Vec<knowledge_reuses::Model>, ServiceError> {
    give_back(txn, reuses_of(txn, entry.id).await?, actor, now).await
}

/// Give back the reuse an answer from knowledge credited, in the transaction that rejects or
/// reverses the answer (the pointer was wrong, so the agent pays nothing for it): as
/// [`refund_all`] does for one reuse.
pub async fn refund_for_answer(
    txn: &WriteTxn,
    answer_id: i64,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Vec<knowledge_reuses::Model>, ServiceError> {
    let reuses = knowledge_reuses::Entity::find()
        .filter(knowledge_reuses::Column::AnswerId.eq(answer_id))
        .filter(knowledge_reuses::Column::Kind.eq(ReuseKind::Reuse))
        .all(txn)
        .await?;
    give_back(txn, reuses, actor, now).await
}

/// A refund row for each of `reuses` not given back yet, with the money moved back.
async fn give_back(
    txn: &WriteTxn,
    reuses: Vec<knowledge_reuses::Model>,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Vec<knowledge_reuses::Model>, ServiceError> {
    let mut given_back = Vec::new();
    for reuse in reuses {
        let inserted = knowledge_reuses::Entity::insert(knowledge_reuses::ActiveModel {
            id: NotSet,
            niche_id: Set(reuse.niche_id),
            entry_id: Set(reuse.entry_id),
            kind: Set(ReuseKind::Refund),
            agent_id: Set(reuse.agent_id),
            external_id: Set(None),
            question_id: Set(reuse.question_id),
            answer_id: Set(None),
            amount_minor: Set(reuse.amount_minor),
            month: Set(reuse.month.clone()),
            revenue_event_id: Set(reuse.revenue_event_id),
            refunds: Set(Some(reuse.id)),
            created_at: Set(now),
        })
        .on_conflict(
            OnConflict::column(knowledge_reuses::Column::Refunds)
                .do_nothing()
                .to_owned(),
        )
        .try_insert()
        .exec(txn)
        .await?;
        if !matches!(inserted, TryInsertResult::Inserted(_)) {
            continue;
        }
        budget::refund_reuse(txn, reuse.niche_id, reuse.amount_minor, &reuse.month).await?;
        let verdict = match reuse.revenue_event_id {
            Some(event) => revenue::reverse_event(txn, event, now).await?,
            None => revenue::BountyVerdict::default(),
        };
        audit::record(
            txn,
            AuditEntry {
                actor,
                action: "knowledge.reuse_refunded",
                subject_type: "knowledge_entry",
                subject_id: reuse.entry_id,
                niche_id: Some(reuse.niche_id),
                detail: json!({
                    "reuseId": reuse.id,
                    "externalId": reuse.external_id,
                    "questionId": reuse.question_id,
                    "amountMinor": reuse.amount_minor,
                    "reversed": verdict.moved,
                    "clawbacks": verdict.clawbacks.iter().map(|(_, id, _)| id).collect::<Vec<_>>(),
                }),
            },
            now,
        )
        .await?;
        given_back.push(reuse);
    }
    Ok(given_back)
}

/// How many times each of `entry_ids` was reused (refunded reuses included: they were relied on).
pub async fn counts<C: ConnectionTrait>(
    conn: &C,
    entry_ids: &[i64],
) -> Result<HashMap<i64, i64>, ServiceError> {
    if entry_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<(i64, i64)> = knowledge_reuses::Entity::find()
        .select_only()
        .column(knowledge_reuses::Column::EntryId)
        .column_as(knowledge_reuses::Column::Id.count(), "reuses")
        .filter(knowledge_reuses::Column::EntryId.is_in(entry_ids.iter().copied()))
        .filter(knowledge_reuses::Column::Kind.eq(ReuseKind::Reuse))
        .group_by(knowledge_reuses::Column::EntryId)
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows.into_iter().collect())
}
