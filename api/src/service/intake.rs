//! An agent asks (docs/contract.md#asking-a-question): store the question once, however many
//! times it is delivered.

use chrono::{DateTime, Duration, Utc};
use entity::agent_questions::{self, QuestionStatus, Urgency};
use entity::niches::NicheStatus;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, DatabaseConnection, EntityTrait, NotSet, QueryFilter,
    TryInsertResult,
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

    let txn = begin_write(db).await?;
    let inserted = agent_questions::Entity::insert(agent_questions::ActiveModel {
        id: NotSet,
        niche_id: Set(niche.id),
        external_id: Set(new.external_id.clone()),
        agent_id: Set(new.agent_id.clone()),
        registered_agent_id: Set(asker.agent_id()),
        title: Set(new.title),
        question: Set(new.question),
        context: Set(new.context),
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
        expires_at: Set(now + Duration::seconds(lifetime)),
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
    .exec(&txn)
    .await?;

    match inserted {
        TryInsertResult::Inserted(result) => {
            let question_id = result.last_insert_id;
            // A bounty is checked and reserved by one conditional update of the niche's
            // balance (the limit as it is now, whoever changed it); a question without one
            // touches no budget at all.
            let budget = if bounty > 0 {
                if !budget::try_reserve(&txn, niche.id, question_id, bounty, now).await? {
                    let refused = budget::budget_of(&txn, &niche, now).await?;
                    txn.rollback().await?;
                    return Err(budget::over_budget(&refused, now));
                }
                audit::record(
                    &txn,
                    AuditEntry {
                        actor: &actor,
                        action: "budget.reserved",
                        subject_type: "budget",
                        subject_id: question_id,
                        niche_id: Some(niche.id),
                        detail: json!({ "questionId": question_id, "amountMinor": bounty }),
                    },
                    now,
                )
                .await?;
                budget::budget_of(&txn, &niche, now).await?
            } else {
                // As the niche's row was read for this intake.
                budget::balance_of(&niche, now)
            };
            audit::record(
                &txn,
                AuditEntry {
                    actor: &actor,
                    action: "question.created",
                    subject_type: "question",
                    subject_id: question_id,
                    niche_id: Some(niche.id),
                    detail: json!({ "externalId": new.external_id, "bountyMinor": bounty }),
                },
                now,
            )
            .await?;
            txn.commit().await?;
            hint.changed();
            Ok(IntakeOutcome {
                question_id,
                status: QuestionStatus::Open,
                duplicate: false,
                niche_id: niche.id,
                expires_at: now + Duration::seconds(lifetime),
                budget,
            })
        }
        TryInsertResult::Conflicted | TryInsertResult::Empty => {
            txn.rollback().await?;
            let existing = agent_questions::Entity::find()
                .filter(agent_questions::Column::NicheId.eq(niche.id))
                .filter(agent_questions::Column::ExternalId.eq(new.external_id.clone()))
                .one(db)
                .await?
                .ok_or_else(|| {
                    ServiceError::Internal(anyhow::anyhow!(
                        "insert conflicted but no question has external id {:?}",
                        new.external_id
                    ))
                })?;
            // The external id is unique per niche, whoever asked: another agent's question is
            // neither shown nor touched.
            if existing.registered_agent_id != asker.agent_id() {
                return Err(Conflict::ExternalIdTaken.into());
            }
            Ok(IntakeOutcome {
                question_id: existing.id,
                status: existing.status,
                duplicate: true,
                niche_id: niche.id,
                expires_at: existing.expires_at,
                budget: budget::budget_of(db, &niche, now).await?,
            })
        }
    }
}

fn describe(niche: &intake::NicheRef) -> String {
    match niche {
        intake::NicheRef::Slug(slug) => format!("'{slug}'"),
        intake::NicheRef::Id(id) => format!("with id {id}"),
    }
}
