//! What a settled answer writes: the answer row, the scored contribution, the audit entries, the
//! agent's charge, the answerer's pay and the agent's event.

use chrono::{DateTime, Utc};
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, ExchangeKind};
use entity::budget_entries::BudgetEntryKind;
use entity::contribution_events::{self, ContributionStatus};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter,
    TryInsertResult,
};
use serde_json::json;

use crate::db::WriteTxn;
use crate::domain::answer::{Kind, ValidAnswer};
use crate::domain::intake::option_label;
use crate::domain::{scoring, weighing};
use crate::error::{Conflict, ServiceError};
use crate::service::agents::outbox::{self, EventType, NewEvent};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::Viewer;
use crate::service::{money::budget, money::revenue, money::scores, money::standing};

use super::{Answering, niche_of};

/// What every answer that counts writes, alone or one of several: its contribution (points and
/// review state by the rules), the answer row, the answerer's score, and the audit rows.
pub(super) async fn record_the_answer(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    now: DateTime<Utc>,
) -> Result<(Contribution, agent_answers::Model), ServiceError> {
    let (viewer, question, valid, confidence) = (
        answering.viewer,
        answering.question,
        answering.valid,
        answering.confidence,
    );
    let contribution = book_contribution(txn, answering, now).await?;
    let answer = store_answer(
        txn,
        viewer,
        question,
        valid,
        Stored {
            contribution_event_id: Some(contribution.id),
            knowledge_entry_id: None,
            confidence,
        },
        now,
    )
    .await?;
    scores::recompute(txn, question.niche_id, viewer.user_id, now).await?;
    let actor = Actor::User(viewer.user_id);
    audit_the_answer(txn, &actor, question, &answer, valid, &contribution, now).await?;
    Ok((contribution, answer))
}

/// The contribution a winning answer earns, as booked.
pub(super) struct Contribution {
    /// Its row.
    pub(super) id: i64,
    /// Its points, diminished by the answerer's recent answers in the niche.
    pub(super) points: i64,
    /// Verified on arrival (for an answerer the niche already trusts) or pending review.
    pub(super) status: ContributionStatus,
}

impl Contribution {
    pub(super) fn verified(&self) -> bool {
        self.status == ContributionStatus::Verified
    }
}

/// Book the answer's contribution: its points and review state by the scoring rules, once per
/// question (the dedupe key derives from it, so even a double-scored path books once).
pub(super) async fn book_contribution(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    now: DateTime<Utc>,
) -> Result<Contribution, ServiceError> {
    let (viewer, question, valid, confidence) = (
        answering.viewer,
        answering.question,
        answering.valid,
        answering.confidence,
    );
    let answer_type = answering.answer_type;
    let counts = answering.history.counts();
    let points = scoring::diminished_points(
        answer_type.default_points,
        counts.verified_in_window,
        answer_type
            .diminish_after
            .map_or(0, |d| u64::try_from(d).unwrap_or(0)),
    );
    // The trust rule (docs/contract.md#weighing-answers): the Wilson lower bound of the
    // person's verified rate in the niche against the niche's threshold.
    let niche = niche_of(txn, question).await?;
    let lower_bound = weighing::wilson_lower_bound(counts.verified, counts.judged);
    let status = if weighing::trusted(lower_bound, niche.trust_lower_bound_bps) {
        ContributionStatus::Verified
    } else {
        ContributionStatus::Pending
    };
    let verified = status == ContributionStatus::Verified;
    let dedupe_key = format!("agent_answer:question:{}", question.id);
    let inserted = contribution_events::Entity::insert(contribution_events::ActiveModel {
        id: NotSet,
        niche_id: Set(question.niche_id),
        user_id: Set(viewer.user_id),
        type_id: Set(answer_type.id),
        points: Set(points),
        status: Set(status),
        source: Set("answer".into()),
        evidence: Set(json!({
            "questionId": question.id,
            "optionId": valid.option_id,
            "confidence": confidence,
        })),
        dedupe_key: Set(Some(dedupe_key.clone())),
        verified_at: Set(verified.then_some(now)),
        verified_by: Set(None),
        reverses: Set(None),
        created_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            contribution_events::Column::NicheId,
            contribution_events::Column::UserId,
            contribution_events::Column::DedupeKey,
        ])
        .target_and_where(contribution_events::Column::DedupeKey.is_not_null())
        .do_nothing()
        .to_owned(),
    )
    .try_insert()
    .exec(txn)
    .await?;
    let id = match inserted {
        TryInsertResult::Inserted(result) => result.last_insert_id,
        TryInsertResult::Conflicted | TryInsertResult::Empty => contribution_events::Entity::find()
            .filter(contribution_events::Column::NicheId.eq(question.niche_id))
            .filter(contribution_events::Column::UserId.eq(viewer.user_id))
            .filter(contribution_events::Column::DedupeKey.eq(dedupe_key))
            .one(txn)
            .await?
            .map(|e| e.id)
            .ok_or_else(|| {
                ServiceError::Internal(anyhow::anyhow!("dedupe conflict without a row"))
            })?,
    };
    Ok(Contribution { id, points, status })
}

/// The answer's audit rows: the question answered (or the task completed) and the contribution
/// made, in one statement (this transaction holds the question's turn).
pub(super) async fn audit_the_answer(
    txn: &WriteTxn,
    actor: &Actor,
    question: &agent_questions::Model,
    answer: &agent_answers::Model,
    valid: &ValidAnswer,
    contribution: &Contribution,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let task = question.kind == ExchangeKind::Task;
    audit::record_all(
        txn,
        vec![
            audit::row(
                AuditEntry {
                    actor,
                    action: if task {
                        "task.completed"
                    } else {
                        "question.answered"
                    },
                    subject_type: "question",
                    subject_id: question.id,
                    niche_id: Some(question.niche_id),
                    detail: json!({
                        "answerId": answer.id,
                        "optionId": valid.option_id,
                        "actualCostMinor": valid.actual_cost_minor,
                    }),
                },
                now,
            ),
            audit::row(
                AuditEntry {
                    actor,
                    action: "contribution.created",
                    subject_type: "contribution",
                    subject_id: contribution.id,
                    niche_id: Some(question.niche_id),
                    detail: json!({
                        "points": contribution.points,
                        "status": contribution.status,
                        "questionId": question.id,
                    }),
                },
                now,
            ),
        ],
    )
    .await?;
    Ok(())
}

/// Settle the agent's reservation in the ledger: a question is charged its bounty; a task what
/// it cost, the rest of its reservation released together. What was charged, if anything.
pub(super) async fn charge_the_agent(
    txn: &WriteTxn,
    actor: &Actor,
    question: &agent_questions::Model,
    valid: &ValidAnswer,
    now: DateTime<Utc>,
) -> Result<Option<i64>, ServiceError> {
    let task = question.kind == ExchangeKind::Task;
    match valid.actual_cost_minor.filter(|_| task) {
        Some(actual) => {
            let settled =
                budget::settle_at_cost(txn, question.niche_id, question.id, actual, now).await?;
            if settled.released > 0 {
                budget_audit(
                    txn,
                    actor,
                    question,
                    "budget.released",
                    settled.released,
                    now,
                )
                .await?;
            }
            Ok((settled.charged > 0).then_some(settled.charged))
        }
        None => Ok(budget::settle(
            txn,
            question.niche_id,
            question.id,
            BudgetEntryKind::Charge,
            now,
        )
        .await?),
    }
}

/// Book the `amount` charged as revenue, the answerer's share by their standing in the niche;
/// held until review when the contribution is not verified yet.
pub(super) async fn pay_the_answerer(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    answer: &agent_answers::Model,
    amount: i64,
    contribution: &Contribution,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let niche = niche_of(txn, question).await?;
    let ladder = scores::ladder(txn).await?;
    let share = standing::niche_shares(txn, niche.id, &ladder)
        .await?
        .into_iter()
        .find(|(user, _)| *user == viewer.user_id)
        .map_or(0, |(_, bps)| bps);
    revenue::book_bounty(
        txn,
        &niche,
        question.id,
        answer.id,
        (viewer.user_id, share),
        amount,
        if question.kind == ExchangeKind::Task {
            revenue::TASK_SOURCE
        } else {
            revenue::BOUNTY_SOURCE
        },
        !contribution.verified(),
        now,
    )
    .await?;
    Ok(())
}

/// The agent's event, in the outbox: `expert_answer.created`, or `task.completed` for a task.
pub(super) async fn tell_the_agent(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    question: &agent_questions::Model,
    answer: &agent_answers::Model,
    contribution: &Contribution,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let (viewer, valid) = (answering.viewer, answering.valid);
    let review = if contribution.verified() {
        "verified"
    } else {
        "pending"
    };
    // How much the answer weighs: the answerer's record in the niche as it stands now — the
    // history read before the write, and this answer when it was verified on arrival.
    let record = answering
        .history
        .record_with(contribution.verified().then_some(weighing::Judged {
            confidence: answer.confidence,
            verified: true,
        }));
    let answerer = crate::service::people::weighing::answerer_json(&record);
    let event = if question.kind == ExchangeKind::Task {
        NewEvent::about_question(
            EventType::TaskCompleted,
            question,
            Some(viewer.user_id),
            json!({
                "answerId": answer.id,
                "result": valid.body,
                "actualCostMinor": valid.actual_cost_minor,
                "budgetLimitMinor": question.bounty_minor,
                "completedBy": viewer.handle,
                "review": review,
                "confidence": answer.confidence,
                "answerer": answerer,
            }),
        )
    } else {
        NewEvent::about_question(
            EventType::AnswerCreated,
            question,
            Some(viewer.user_id),
            json!({
                "answerId": answer.id,
                "answer": valid.body,
                "optionId": valid.option_id,
                "optionLabel": valid
                    .option_id
                    .as_deref()
                    .and_then(|chosen| option_label(&question.options, chosen)),
                "answeredBy": viewer.handle,
                "review": review,
                "confidence": answer.confidence,
                "answerer": answerer,
                "answers": {
                    "wanted": question.answers_wanted,
                    "in": question.answers_in.max(1),
                },
            }),
        )
    };
    outbox::enqueue_to(txn, event, question.registered_agent_id, now).await?;
    Ok(())
}

/// The audit row of a bounty's reservation settling (`budget.charged` / `budget.released`).
pub async fn budget_audit(
    conn: &WriteTxn,
    actor: &Actor,
    question: &agent_questions::Model,
    action: &str,
    amount: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    audit::record(
        conn,
        AuditEntry {
            actor,
            action,
            subject_type: "budget",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({ "questionId": question.id, "amountMinor": amount }),
        },
        now,
    )
    .await?;
    Ok(())
}

/// What an answer row links to and states beyond its words.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stored {
    /// The contribution it earned.
    pub(super) contribution_event_id: Option<i64>,
    /// The knowledge entry it settled the question from.
    pub(super) knowledge_entry_id: Option<i64>,
    /// The confidence stated.
    pub(super) confidence: Option<i32>,
}

/// Insert the person's answer row, or replace their earlier decline. An `answered` row is final.
pub(super) async fn store_answer(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    valid: &ValidAnswer,
    stored: Stored,
    now: DateTime<Utc>,
) -> Result<agent_answers::Model, ServiceError> {
    let Stored {
        contribution_event_id,
        knowledge_entry_id,
        confidence,
    } = stored;
    let kind = match valid.kind {
        Kind::Answered => AnswerKind::Answered,
        Kind::InsufficientContext => AnswerKind::InsufficientContext,
        Kind::NeedsResearch => AnswerKind::NeedsResearch,
    };
    let existing = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question.id))
        .filter(agent_answers::Column::UserId.eq(viewer.user_id))
        .one(txn)
        .await?;
    match existing {
        Some(row) if row.kind == AnswerKind::Answered => Err(Conflict::AlreadyAnswered.into()),
        Some(row) => {
            let mut row: agent_answers::ActiveModel = row.into();
            row.kind = Set(kind);
            row.option_id = Set(valid.option_id.clone());
            row.body = Set(valid.body.clone());
            row.contribution_event_id = Set(contribution_event_id);
            row.actual_cost_minor = Set(valid.actual_cost_minor);
            row.research_round = Set(question.research_round);
            row.knowledge_entry_id = Set(knowledge_entry_id);
            row.confidence = Set(confidence);
            row.one_of_several = Set(question.answers_wanted > 1);
            row.updated_at = Set(now);
            Ok(row.update(txn).await?)
        }
        None => Ok(agent_answers::ActiveModel {
            id: NotSet,
            question_id: Set(question.id),
            user_id: Set(viewer.user_id),
            kind: Set(kind),
            option_id: Set(valid.option_id.clone()),
            body: Set(valid.body.clone()),
            contribution_event_id: Set(contribution_event_id),
            actual_cost_minor: Set(valid.actual_cost_minor),
            research_round: Set(question.research_round),
            knowledge_entry_id: Set(knowledge_entry_id),
            confidence: Set(confidence),
            one_of_several: Set(question.answers_wanted > 1),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(txn)
        .await?),
    }
}
