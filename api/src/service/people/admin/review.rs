//! Contribution review (docs/contract.md#held-money): the queue of contributions awaiting review,
//! and a verdict that the contribution's score, the money and the question follow.

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Utc};
use entity::agent_answers;
use entity::agent_questions::{self, QuestionStatus};
use entity::contribution_events::{self, ContributionStatus};
use entity::niches;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::json;

use crate::error::{Conflict, ServiceError};
use crate::live::ChangeHint;
use crate::service::agents::outbox::{self, EventType, NewEvent};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};
use crate::service::people::accounts::user_by_handle;
use crate::service::questions::queue::niche_by_slug;
use crate::service::{
    knowledge, knowledge::reuse, money::budget, money::revenue, money::scores, money::standing,
    questions::answering,
};

/// Contributions awaiting review, newest first (admins only).
pub async fn review_queue(
    db: &Db,
    viewer: Option<&Viewer>,
    niche_slug: Option<&str>,
    answerer: Option<&str>,
    first: u64,
) -> Result<Vec<standing::ContributionView>, ServiceError> {
    access::admin(viewer)?;
    let niche_id = match niche_slug.map(str::trim).filter(|s| !s.is_empty()) {
        Some(slug) => Some(niche_by_slug(db, slug).await?.id),
        None => None,
    };
    let user_id = match answerer.map(str::trim).filter(|s| !s.is_empty()) {
        Some(handle) => Some(user_by_handle(db, handle.trim_start_matches('@')).await?.id),
        None => None,
    };
    standing::contributions_in(db, niche_id, user_id, ContributionStatus::Pending, first).await
}

/// A review decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// pending → verified.
    Verify,
    /// pending → rejected.
    Reject,
    /// verified → reversed (the row keeps its points; they leave the sum).
    Reverse,
}

/// Apply a review decision to a contribution and recompute its owner's score. When it is an
/// answer to an agent's question, the money and the question follow the verdict
/// (docs/contract.md#held-money): verify makes the held bounty owed; reject or reverse gives the
/// agent's charge back, reverses the bounty's allocations (clawing back what was already paid
/// out) and reopens the question if it has not expired, its bounty reserved again.
pub async fn review(
    db: &Db,
    hint: &ChangeHint,
    viewer: Option<&Viewer>,
    contribution_id: i64,
    decision: Decision,
    note: Option<String>,
    now: DateTime<Utc>,
) -> Result<contribution_events::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let event = contribution_events::Entity::find_by_id(contribution_id)
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such contribution".into()))?;
    if event.user_id == admin.user_id {
        return Err(ServiceError::SelfReview(
            "nobody reviews their own contribution: another admin must".into(),
        ));
    }
    // Rejecting or reversing gives a charge back and reopens the question: the answerer and the
    // agent are told why, so a reason is required.
    let note = note.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
    if decision != Decision::Verify && note.is_none() {
        return Err(ServiceError::BadInput(
            match decision {
                Decision::Reverse => {
                    "give a reason to reverse: the answerer and the agent are told it"
                }
                _ => "give a reason to reject: the answerer and the agent are told it",
            }
            .into(),
        ));
    }
    if note.as_ref().is_some_and(|n| n.chars().count() > 500) {
        return Err(ServiceError::BadInput(
            "a review note is at most 500 characters".into(),
        ));
    }
    let (from, to, action) = match decision {
        Decision::Verify => (
            ContributionStatus::Pending,
            ContributionStatus::Verified,
            "contribution.verified",
        ),
        Decision::Reject => (
            ContributionStatus::Pending,
            ContributionStatus::Rejected,
            "contribution.rejected",
        ),
        Decision::Reverse => (
            ContributionStatus::Verified,
            ContributionStatus::Reversed,
            "contribution.reversed",
        ),
    };
    // A reject or reverse may reopen the answer's question: it takes the question's turn first,
    // as its answerers do, so it waits for the writer settling it now and is waited for by the
    // writers after it, and clears the note of the settlement it undoes (below), so they are
    // not refused a question that is open again. Taken before the write begins, never inside it
    // (answerers hold the turn while they wait to write).
    let turns = answering::question_turns(db);
    let mut turn = match decision {
        Decision::Verify => None,
        Decision::Reject | Decision::Reverse => match answered_question_of(db, &event).await? {
            Some(question_id) => Some(turns.take(question_id).await),
            None => None,
        },
    };
    let txn = db.begin_write().await?;
    let mut update = contribution_events::Entity::update_many()
        .col_expr(contribution_events::Column::Status, Expr::value(to));
    if decision == Decision::Verify {
        update = update
            .col_expr(
                contribution_events::Column::VerifiedAt,
                Expr::value(Some(now)),
            )
            .col_expr(
                contribution_events::Column::VerifiedBy,
                Expr::value(Some(admin.user_id)),
            );
    }
    let changed = update
        .filter(contribution_events::Column::Id.eq(event.id))
        .filter(contribution_events::Column::Status.eq(from))
        .exec(&txn)
        .await?;
    if changed.rows_affected == 0 {
        txn.rollback().await?;
        let word = match decision {
            Decision::Verify => "verified",
            Decision::Reject => "rejected",
            Decision::Reverse => "reversed",
        };
        let needed = if from == ContributionStatus::Pending {
            "pending"
        } else {
            "verified"
        };
        return Err(Conflict::ContributionNotReviewable {
            needed,
            decision: word,
        }
        .into());
    }
    scores::recompute(&txn, event.niche_id, event.user_id, now).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action,
            subject_type: "contribution",
            subject_id: event.id,
            niche_id: Some(event.niche_id),
            detail: json!({ "note": note, "points": event.points }),
        },
        now,
    )
    .await?;
    // Knowledge follows the verdict: a verified answer is written as an entry, a verified
    // correction as the entry's next version; a rejected or reversed one's entry is retracted.
    let actor = Actor::User(admin.user_id);
    match decision {
        Decision::Verify | Decision::Reject => {
            knowledge::review_correction(
                &txn,
                event.id,
                decision == Decision::Verify,
                admin.user_id,
                now,
            )
            .await?;
        }
        Decision::Reverse => {}
    }
    if decision != Decision::Verify {
        knowledge::retract_for(&txn, event.id, note.as_deref(), &actor, now).await?;
    }
    let reopened = match answer_of(&txn, &event).await? {
        Some((answer, question)) => {
            if decision == Decision::Verify {
                knowledge::record_verified_answer(
                    &txn,
                    &question,
                    &answer,
                    event.id,
                    Some(admin.user_id),
                    now,
                )
                .await?;
            }
            let reopened =
                money_follows_the_verdict(&txn, &actor, &answer, &question, decision, now).await?;
            tell_the_agent_the_verdict(&txn, &answer, &question, decision, note.as_deref(), now)
                .await?;
            reopened
        }
        None => false,
    };
    let updated = contribution_events::Entity::find_by_id(event.id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("contribution vanished")))?;
    txn.commit().await?;
    if reopened {
        if let Some(turn) = turn.as_mut() {
            turn.clear();
        }
        hint.changed();
    }
    drop(turn);
    Ok(updated)
}

/// The question whose answer earned `event`, if an answer did.
async fn answered_question_of(
    db: &Db,
    event: &contribution_events::Model,
) -> Result<Option<i64>, ServiceError> {
    Ok(agent_answers::Entity::find()
        .filter(agent_answers::Column::ContributionEventId.eq(event.id))
        .one(db)
        .await?
        .map(|answer| answer.question_id))
}

/// The answer (and its question) a contribution was earned by, if it was earned by one.
async fn answer_of(
    txn: &WriteTxn,
    event: &contribution_events::Model,
) -> Result<Option<(agent_answers::Model, agent_questions::Model)>, ServiceError> {
    let Some(answer) = agent_answers::Entity::find()
        .filter(agent_answers::Column::ContributionEventId.eq(event.id))
        .one(txn)
        .await?
    else {
        return Ok(None);
    };
    Ok(agent_questions::Entity::find_by_id(answer.question_id)
        .one(txn)
        .await?
        .map(|question| (answer, question)))
}

/// The money and the question after a verdict on an answer; whether the question reopened.
async fn money_follows_the_verdict(
    txn: &WriteTxn,
    actor: &Actor,
    answer: &agent_answers::Model,
    question: &agent_questions::Model,
    decision: Decision,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let money_audit = |action: &'static str, detail: serde_json::Value| AuditEntry {
        actor,
        action,
        subject_type: "budget",
        subject_id: question.id,
        niche_id: Some(question.niche_id),
        detail,
    };
    if decision == Decision::Verify {
        let mut verdict =
            revenue::release_held_bounty(txn, question.niche_id, answer.id, now).await?;
        // An answer from knowledge: its author's reuse credit was held with it.
        verdict
            .moved
            .extend(reuse::release_for_answer(txn, answer.id, now).await?);
        if !verdict.moved.is_empty() {
            audit::record(
                txn,
                money_audit(
                    "bounty.owed",
                    json!({ "questionId": question.id, "answerId": answer.id, "allocations": verdict.moved }),
                ),
                now,
            )
            .await?;
        }
        return Ok(false);
    }
    let verdict = revenue::reverse_bounty(txn, question.niche_id, answer.id, now).await?;
    if !verdict.moved.is_empty() || !verdict.clawbacks.is_empty() {
        let clawbacks: Vec<_> = verdict
            .clawbacks
            .iter()
            .map(|(of, id, amount)| json!({ "allocation": of, "clawback": id, "amountMinor": amount }))
            .collect();
        audit::record(
            txn,
            money_audit(
                "bounty.reversed",
                json!({ "questionId": question.id, "answerId": answer.id, "reversed": verdict.moved, "clawbacks": clawbacks }),
            ),
            now,
        )
        .await?;
    }
    let reversed = budget::reverse_charge(txn, question.id, now).await?;
    if let Some(amount) = reversed {
        answering::budget_audit(txn, actor, question, "budget.charge_reversed", amount, now)
            .await?;
    }
    // An answer from knowledge pointed to the wrong entry: what its reuse cost is given back.
    reuse::refund_for_answer(txn, answer.id, actor, now).await?;
    if question.answers_wanted > 1 {
        return reopen_a_place(txn, actor, answer, question, reversed.unwrap_or(0), now).await;
    }
    reopen(txn, actor, answer, question, now).await
}

/// A rejected or reversed answer of a several-answer question gives its place back, not the
/// question (docs/contract.md#several-answers): one fewer answer in, and a question whose
/// places were all filled waits again (unless it has expired), its part of the bounty
/// (`part`, the charge just given back) reserved again if the budget still covers it.
async fn reopen_a_place(
    txn: &WriteTxn,
    actor: &Actor,
    answer: &agent_answers::Model,
    question: &agent_questions::Model,
    part: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    use sea_orm::sea_query::ExprTrait;
    let was_complete = || {
        sea_orm::Condition::all().add(agent_questions::Column::Status.eq(QuestionStatus::Answered))
    };
    let reopened = agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::AnswersIn,
            ExprTrait::sub(Expr::col(agent_questions::Column::AnswersIn), 1),
        )
        .col_expr(
            agent_questions::Column::Status,
            Expr::case(was_complete(), Expr::value(QuestionStatus::Open))
                .finally(Expr::col(agent_questions::Column::Status))
                .into(),
        )
        .col_expr(
            agent_questions::Column::AnsweredAt,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now))
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(agent_questions::Column::AnswersIn.gt(0))
        .filter(agent_questions::Column::Status.is_in([
            QuestionStatus::Answered,
            QuestionStatus::Open,
            QuestionStatus::Researching,
        ]))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
        .exec(txn)
        .await?;
    if reopened.rows_affected == 0 {
        return Ok(false);
    }
    let niche = niches::Entity::find_by_id(question.niche_id)
        .one(txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question without a niche")))?;
    let reserved = budget::reserve_again(txn, &niche, question.id, part, now).await?;
    if part > 0 {
        let action = if reserved {
            "budget.reserved"
        } else {
            "budget.not_reserved"
        };
        answering::budget_audit(txn, actor, question, action, part, now).await?;
    }
    if question.status == QuestionStatus::Answered {
        crate::service::questions::escalation::restart(txn, question, now).await?;
    }
    audit::record(
        txn,
        AuditEntry {
            actor,
            action: "question.place_reopened",
            subject_type: "question",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({
                "answerId": answer.id,
                "answersIn": question.answers_in - 1,
                "answersWanted": question.answers_wanted,
            }),
        },
        now,
    )
    .await?;
    Ok(true)
}

/// Reopen an answered question whose answer was rejected or reversed, unless it has expired:
/// open again, its round advanced (so earlier decliners see it again) and its bounty reserved
/// again if the budget still covers it (otherwise it waits with no bounty, and says so).
async fn reopen(
    txn: &WriteTxn,
    actor: &Actor,
    answer: &agent_answers::Model,
    question: &agent_questions::Model,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let reopened = agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::Status,
            Expr::value(QuestionStatus::Open),
        )
        .col_expr(
            agent_questions::Column::AnsweredAt,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(
            agent_questions::Column::ResearchRound,
            Expr::col(agent_questions::Column::ResearchRound).add(1),
        )
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now))
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(agent_questions::Column::Status.eq(QuestionStatus::Answered))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
        .exec(txn)
        .await?;
    if reopened.rows_affected == 0 {
        return Ok(false);
    }
    crate::service::questions::escalation::restart(txn, question, now).await?;
    let niche = niches::Entity::find_by_id(question.niche_id)
        .one(txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question without a niche")))?;
    let bounty = question.bounty_minor;
    let reserved = budget::reserve_again(txn, &niche, question.id, bounty, now).await?;
    if !reserved {
        agent_questions::Entity::update_many()
            .col_expr(agent_questions::Column::BountyMinor, Expr::value(0_i64))
            .filter(agent_questions::Column::Id.eq(question.id))
            .exec(txn)
            .await?;
    }
    let budget_action = if !reserved {
        Some("budget.not_reserved")
    } else if bounty > 0 {
        Some("budget.reserved")
    } else {
        None
    };
    if let Some(action) = budget_action {
        answering::budget_audit(txn, actor, question, action, bounty, now).await?;
    }
    audit::record(
        txn,
        AuditEntry {
            actor,
            action: "question.reopened",
            subject_type: "question",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({
                "answerId": answer.id,
                "round": question.research_round + 1,
                "bountyMinor": if reserved { bounty } else { 0 },
            }),
        },
        now,
    )
    .await?;
    Ok(true)
}

/// The verdict travels with the answer (docs/contract.md#events-for-the-agent): when the
/// contribution reviewed is an answer to an agent's question, the agent hears
/// `expert_answer.verified`, or `expert_answer.rejected` with the note and the review it had.
async fn tell_the_agent_the_verdict(
    txn: &WriteTxn,
    answer: &agent_answers::Model,
    question: &agent_questions::Model,
    decision: Decision,
    note: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let (kind, payload) = match decision {
        Decision::Verify => (
            EventType::AnswerVerified,
            json!({
                "questionId": question.id,
                "externalId": question.external_id,
                "answerId": answer.id,
            }),
        ),
        Decision::Reject | Decision::Reverse => (
            EventType::AnswerRejected,
            json!({
                "questionId": question.id,
                "externalId": question.external_id,
                "answerId": answer.id,
                "note": note,
                "previousReview": if decision == Decision::Reject { "pending" } else { "verified" },
            }),
        ),
    };
    outbox::enqueue(
        txn,
        NewEvent {
            event: kind,
            niche_id: question.niche_id,
            question_id: Some(question.id),
            user_id: None,
            payload,
        },
        now,
    )
    .await?;
    Ok(())
}
