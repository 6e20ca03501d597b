//! Several answers to one question (docs/contract.md#several-answers): each answerer claims one of
//! the places the agent asked for, and the question settles when they are filled.

use chrono::{DateTime, Utc};
use entity::agent_questions::{self, QuestionStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter};

use crate::db::WriteTxn;
use crate::domain::weighing;
use crate::error::ServiceError;
use crate::service::audit::Actor;
use crate::service::{knowledge, money::budget};

use super::booking::{budget_audit, pay_the_answerer, record_the_answer, tell_the_agent};
use super::{AnswerOutcome, Answering, find_question, not_waiting};
use entity::agent_questions::WAITING;

/// Claim one of a several-answer question's places (docs/contract.md#several-answers): one
/// conditional update counts the answer in while the question waits and has a place left, and
/// the answer that fills the last place settles it. Of any number of answerers racing, on any
/// number of instances, exactly as many as there are places succeed. The question as claimed.
pub(super) async fn claim_a_place(
    txn: &WriteTxn,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<agent_questions::Model>, ServiceError> {
    use sea_orm::sea_query::ExprTrait;
    let answers_in = || Expr::col(agent_questions::Column::AnswersIn);
    let fills = || {
        Condition::all().add(ExprTrait::gte(
            ExprTrait::add(answers_in(), 1),
            Expr::col(agent_questions::Column::AnswersWanted),
        ))
    };
    let claimed = agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::AnswersIn,
            ExprTrait::add(answers_in(), 1),
        )
        .col_expr(
            agent_questions::Column::Status,
            Expr::case(fills(), Expr::value(QuestionStatus::Answered))
                .finally(Expr::col(agent_questions::Column::Status))
                .into(),
        )
        .col_expr(
            agent_questions::Column::AnsweredAt,
            Expr::case(fills(), Expr::value(Some(now)))
                .finally(Expr::col(agent_questions::Column::AnsweredAt))
                .into(),
        )
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now))
        .filter(agent_questions::Column::Id.eq(question_id))
        .filter(agent_questions::Column::Status.is_in(WAITING))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
        .filter(ExprTrait::lt(
            answers_in(),
            Expr::col(agent_questions::Column::AnswersWanted),
        ))
        .exec_with_returning(txn)
        .await?;
    Ok(claimed.into_iter().next())
}

/// One answer of a several-answer question, in one transaction: claim a place, book the
/// contribution, store the answer, charge the agent this answer's part of the bounty (the rest
/// stays reserved), pay the answerer that part (held until its own verdict), tell the agent,
/// and when this answer fills the last place, conclude: consensus or disagreement.
pub(super) async fn settle_one_of_several(
    txn: &WriteTxn,
    answering: &Answering<'_>,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let (viewer, question) = (answering.viewer, answering.question);
    let Some(claimed) = claim_a_place(txn, question.id, now).await? else {
        return Err(not_waiting(&find_question(txn, question.id).await?));
    };
    let (contribution, answer) = record_the_answer(txn, answering, now).await?;
    let actor = Actor::User(viewer.user_id);
    let part = weighing::bounty_part(
        question.bounty_minor,
        claimed.answers_wanted,
        claimed.answers_in,
    );
    let charged = budget::charge_part(txn, question.niche_id, question.id, part, now).await?;
    if charged > 0 {
        pay_the_answerer(txn, viewer, question, &answer, charged, &contribution, now).await?;
        budget_audit(txn, &actor, question, "budget.charged", charged, now).await?;
    }
    if contribution.verified() {
        knowledge::record_verified_answer(txn, question, &answer, contribution.id, None, now)
            .await?;
    }
    tell_the_agent(txn, answering, &claimed, &answer, &contribution, now).await?;
    if claimed.status == QuestionStatus::Answered {
        crate::service::questions::consensus::conclude(txn, &claimed, now).await?;
        // Only now may its answers become knowledge (docs/contract.md#several-answers).
        knowledge::record_concluded(txn, claimed.id, now).await?;
    }
    let count = format!(
        "{} of {} answers are in",
        claimed.answers_in, claimed.answers_wanted
    );
    let notice = if contribution.verified() {
        format!("Thanks. That is {} points; {count}.", contribution.points)
    } else {
        format!("Thanks. It goes to review before it counts; {count}.")
    };
    Ok(AnswerOutcome {
        answer,
        question: claimed,
        points: contribution.points,
        contribution_status: Some(contribution.status),
        notice,
    })
}
