//! An agent asks (docs/contract.md#asking-a-question): store the question once, however many
//! times it is delivered.

use chrono::{DateTime, Duration, Utc};
use entity::agent_questions::{self, QuestionStatus, Urgency};
use entity::niches::NicheStatus;
use entity::{audit_log, niches};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, NotSet,
    QueryFilter, TryInsertResult,
};
use serde_json::json;

use crate::db::begin_write;
use crate::domain::intake::{self, NewQuestion};
use crate::domain::ledger::Budget;
use crate::error::{Conflict, ServiceError};
use crate::live::ChangeHint;
use crate::service::agents::Asker;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::budget;
use crate::service::niches::find_niche;

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
pub async fn receive_question(
    db: &DatabaseConnection,
    hint: &ChangeHint,
    asker: &Asker,
    new: NewQuestion,
    now: DateTime<Utc>,
) -> Result<IntakeOutcome, ServiceError> {
    let niche = find_niche(db, &new.niche)
        .await?
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

    let bounty = new.bounty_minor.unwrap_or(niche.bounty_minor);
    let bounty_ceiling = niche.max_bounty_minor.max(niche.bounty_minor);
    if bounty > bounty_ceiling {
        return Err(ServiceError::BadInput(format!(
            "bountyMinor {bounty} is above this niche's maximum of {bounty_ceiling}"
        )));
    }
    let lifetime = new
        .expires_in_seconds
        .unwrap_or(niche.default_question_lifetime_secs)
        .clamp(intake::MIN_LIFETIME_SECS, intake::MAX_LIFETIME_SECS);

    let store = Store {
        niche,
        new,
        asker: asker.agent_id(),
        actor,
        bounty,
        lifetime,
        now,
    };
    batch::submit(db, hint, store).await
}

/// One intake, checked and ready to be written.
#[derive(Debug)]
pub(crate) struct Store {
    niche: niches::Model,
    new: NewQuestion,
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
    db: &DatabaseConnection,
    hint: &ChangeHint,
    store: &Store,
) -> Result<IntakeOutcome, ServiceError> {
    let txn = begin_write(db).await?;
    let mut created = Vec::with_capacity(1);
    match write(&txn, store, &mut created).await {
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

/// Write one intake inside `txn`: the question (or find the one stored before under its
/// external id), its bounty's reservation and their audit rows. A bounty the budget cannot
/// cover leaves nothing behind (its question row is removed again) and answers 402, so the
/// transaction may go on to commit other intakes. The question's `question.created` audit row
/// is added to `created`, for the caller to append with the others of its transaction in one
/// statement before it commits.
async fn write<C: ConnectionTrait>(
    txn: &C,
    store: &Store,
    created: &mut Vec<audit_log::ActiveModel>,
) -> Result<IntakeOutcome, ServiceError> {
    let Store {
        niche,
        new,
        asker,
        actor,
        bounty,
        lifetime,
        now,
    } = store;
    let (bounty, now) = (*bounty, *now);
    let expires_at = now + Duration::seconds(*lifetime);
    let inserted = agent_questions::Entity::insert(agent_questions::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        external_id: Set(new.external_id.clone()),
        agent_id: Set(new.agent_id.clone()),
        registered_agent_id: Set(*asker),
        title: Set(new.title.clone()),
        question: Set(new.question.clone()),
        context: Set(new.context.clone()),
        options: Set(json!(new.options)),
        urgency: Set(match new.urgency {
            intake::Urgency::Low => Urgency::Low,
            intake::Urgency::Normal => Urgency::Normal,
            intake::Urgency::High => Urgency::High,
        }),
        urgency_rank: Set(new.urgency.rank()),
        related_resource_ids: Set(json!(new.related_resource_ids)),
        status: Set(QuestionStatus::Open),
        bounty_minor: Set(bounty),
        research_round: Set(0),
        needs_context_round: Set(None),
        expires_at: Set(expires_at),
        created_at: Set(now),
        answered_at: Set(None),
        updated_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            agent_questions::Column::NicheId,
            agent_questions::Column::ExternalId,
        ])
        .target_and_where(agent_questions::Column::ExternalId.is_not_null())
        .do_nothing()
        .to_owned(),
    )
    .try_insert()
    .exec(txn)
    .await?;

    let question_id = match inserted {
        TryInsertResult::Inserted(result) => result.last_insert_id,
        TryInsertResult::Conflicted | TryInsertResult::Empty => {
            // Stored before — or earlier in this same batch: either way, that question.
            let existing = agent_questions::Entity::find()
                .filter(agent_questions::Column::NicheId.eq(niche.id))
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
            if existing.registered_agent_id != *asker {
                return Err(Conflict::ExternalIdTaken.into());
            }
            return Ok(IntakeOutcome {
                question_id: existing.id,
                status: existing.status,
                duplicate: true,
                niche_id: niche.id,
                expires_at: existing.expires_at,
                budget: budget::budget_of(txn, niche, now).await?,
            });
        }
    };
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
        audit::record(
            txn,
            AuditEntry {
                actor,
                action: "budget.reserved",
                subject_type: "budget",
                subject_id: question_id,
                niche_id: Some(niche.id),
                detail: json!({ "questionId": question_id, "amountMinor": bounty }),
            },
            now,
        )
        .await?;
        budget::budget_of(txn, niche, now).await?
    } else {
        // As the niche's row was read for this intake.
        budget::balance_of(niche, now)
    };
    created.push(audit::row(
        AuditEntry {
            actor,
            action: "question.created",
            subject_type: "question",
            subject_id: question_id,
            niche_id: Some(niche.id),
            detail: json!({ "externalId": new.external_id, "bountyMinor": bounty }),
        },
        now,
    ));
    Ok(IntakeOutcome {
        question_id,
        status: QuestionStatus::Open,
        duplicate: false,
        niche_id: niche.id,
        expires_at,
        budget,
    })
}

fn describe(niche: &intake::NicheRef) -> String {
    match niche {
        intake::NicheRef::Slug(slug) => format!("'{slug}'"),
        intake::NicheRef::Id(id) => format!("with id {id}"),
    }
}
