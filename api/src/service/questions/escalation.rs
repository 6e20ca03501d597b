//! Escalation (docs/contract.md#escalation): a question still open when its niche's wait for its
//! urgency has passed climbs, once per step and round:
//!
//! 1. at the wait: everyone of the niche who has not been told yet is told now (digests and quiet
//!    hours overridden), and operator webhooks hear `question.escalated`;
//! 2. at twice the wait: askloop's admins are told.
//!
//! Each step is a row of `escalations` (unique per question, round and step), an audit row (the
//! card shows "escalated" live), and `expert_question.escalated` to the agent, all in one
//! transaction. The step is conditional on the question being open and the step not taken, so
//! sweepers on several instances can race. A question that settles, is dismissed or expires is
//! no longer open and never escalates; one that reopens gets a new round and a new clock.

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Duration, Utc};
use entity::agent_questions::{self, QuestionStatus, Urgency};
use entity::{escalations, niches};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter, QueryOrder, QuerySelect,
};
use serde_json::json;

use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::agents::outbox::{EventType, NewEvent};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::questions::answering::audit_and_tell;
use crate::service::{reach, reach::operator_hooks};

/// The wait before step 1 for `urgency` in `niche`, if it escalates at all.
pub fn wait_for(niche: &niches::Model, urgency: Urgency) -> Option<Duration> {
    let secs = match urgency {
        Urgency::High => niche.escalate_high_secs,
        Urgency::Normal => niche.escalate_normal_secs,
        Urgency::Low => niche.escalate_low_secs,
    }?;
    (secs > 0).then(|| Duration::seconds(secs))
}

/// When a question of `urgency` that starts waiting at `now` first escalates.
pub fn first_due(
    niche: &niches::Model,
    urgency: Urgency,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    wait_for(niche, urgency).map(|wait| now + wait)
}

/// The shortest and longest wait a niche may set.
pub const WAIT_RANGE: std::ops::RangeInclusive<i64> = 60..=30 * 24 * 3600;

/// Set a niche's waits per urgency (none: that urgency never escalates). Admins only. Questions
/// already waiting keep the step time they were given.
pub async fn set_waits(
    db: &Db,
    viewer: Option<&crate::service::people::access::Viewer>,
    slug: &str,
    waits: [Option<i64>; 3],
    now: DateTime<Utc>,
) -> Result<niches::Model, ServiceError> {
    use sea_orm::{ActiveModelTrait, IntoActiveModel};
    let admin = crate::service::people::access::admin(viewer)?;
    for (name, wait) in ["high", "normal", "low"].iter().zip(waits) {
        if let Some(secs) = wait
            && !WAIT_RANGE.contains(&secs)
        {
            return Err(ServiceError::BadInput(format!(
                "the {name} wait must be {} to {} seconds (or null: never); got {secs}",
                WAIT_RANGE.start(),
                WAIT_RANGE.end()
            )));
        }
    }
    let txn = db.begin_write().await?;
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(slug.trim().to_lowercase()))
        .one(&txn)
        .await?
        .ok_or_else(|| {
            ServiceError::NotFound(format!("no niche {}", crate::domain::text::cap(slug, 80)))
        })?;
    let mut row = niche.clone().into_active_model();
    row.escalate_high_secs = Set(waits[0]);
    row.escalate_normal_secs = Set(waits[1]);
    row.escalate_low_secs = Set(waits[2]);
    row.updated_at = Set(now);
    let updated = row.update(&txn).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action: "niche.escalation_set",
            subject_type: "niche",
            subject_id: niche.id,
            niche_id: Some(niche.id),
            detail: json!({ "highSecs": waits[0], "normalSecs": waits[1], "lowSecs": waits[2] }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}

/// Restart a reopened question's clock (inside the transaction that reopens it).
pub async fn restart(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let niche = niches::Entity::find_by_id(question.niche_id)
        .one(txn)
        .await?;
    let due = niche.and_then(|n| first_due(&n, question.urgency, now));
    agent_questions::Entity::update_many()
        .col_expr(agent_questions::Column::EscalateAt, Expr::value(due))
        .col_expr(agent_questions::Column::EscalationStep, Expr::value(0))
        .filter(agent_questions::Column::Id.eq(question.id))
        .exec(txn)
        .await?;
    Ok(())
}

/// Take the escalation steps due by `now`, up to `limit`; how many this call took.
pub async fn sweep(
    db: &Db,
    hint: &ChangeHint,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<usize, ServiceError> {
    let due = agent_questions::Entity::find()
        .filter(agent_questions::Column::Status.eq(QuestionStatus::Open))
        .filter(agent_questions::Column::EscalateAt.lte(now))
        .order_by_asc(agent_questions::Column::EscalateAt)
        .limit(limit)
        .all(db)
        .await?;
    let mut taken = 0;
    for question in due {
        if step(db, &question, now).await? {
            hint.changed();
            taken += 1;
        }
    }
    Ok(taken)
}

/// Take `question`'s next step, if it is still due: whether this call took it.
async fn step(
    db: &Db,
    question: &agent_questions::Model,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let Some(due_at) = question.escalate_at else {
        return Ok(false);
    };
    let step = question.escalation_step + 1;
    if step > 2 {
        return Ok(false);
    }
    let txn = db.begin_write().await?;
    let niche = niches::Entity::find_by_id(question.niche_id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question without a niche")))?;
    // Step 2 comes one wait after step 1 was due; the niche's wait as it is now.
    let next = match (step, wait_for(&niche, question.urgency)) {
        (1, Some(wait)) => Some(due_at + wait),
        _ => None,
    };
    let changed = agent_questions::Entity::update_many()
        .col_expr(agent_questions::Column::EscalationStep, Expr::value(step))
        .col_expr(agent_questions::Column::EscalateAt, Expr::value(next))
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now))
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(agent_questions::Column::Status.eq(QuestionStatus::Open))
        .filter(agent_questions::Column::EscalationStep.eq(question.escalation_step))
        .filter(agent_questions::Column::ResearchRound.eq(question.research_round))
        .filter(agent_questions::Column::EscalateAt.lte(now))
        .exec(&txn)
        .await?;
    if changed.rows_affected == 0 {
        txn.rollback().await?;
        return Ok(false);
    }
    let inserted = escalations::Entity::insert(escalations::ActiveModel {
        id: NotSet,
        question_id: Set(question.id),
        round: Set(question.research_round),
        step: Set(step),
        created_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            escalations::Column::QuestionId,
            escalations::Column::Round,
            escalations::Column::Step,
        ])
        .do_nothing()
        .to_owned(),
    )
    .exec_without_returning(&txn)
    .await?;
    if inserted == 0 {
        // Taken already (the step's row is the once-only key).
        txn.rollback().await?;
        return Ok(false);
    }
    audit_and_tell(
        &txn,
        AuditEntry::about_question(
            &Actor::System,
            "question.escalated",
            question,
            json!({ "step": step, "round": question.research_round }),
        ),
        NewEvent::about_question(
            EventType::QuestionEscalated,
            question,
            None,
            json!({ "step": step }),
        ),
        now,
    )
    .await?;
    match step {
        1 => {
            reach::plan_escalation(&txn, question.id, now).await?;
            operator_hooks::enqueue(
                &txn,
                operator_hooks::HookEvent::Escalated,
                &niche,
                &[operator_hooks::QuestionFacts::of(question)],
                now,
            )
            .await?;
        }
        _ => reach::plan_admin_escalation(&txn, question.id, now).await?,
    }
    txn.commit().await?;
    Ok(true)
}
