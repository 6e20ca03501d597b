//! Declining for free ("not enough context") and sending back for research, and telling the agent
//! when every member has said its context is not enough.

use chrono::{DateTime, Utc};
use entity::agent_answers::{self, AnswerKind};
use entity::agent_questions::{self, QuestionStatus};
use entity::niche_members::{self, MemberRole, MemberStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, Condition, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::json;

use crate::db::WriteTxn;
use crate::domain::answer::{Kind, ValidAnswer};
use crate::error::ServiceError;
use crate::service::agents::outbox::{self, EventType, NewEvent};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::Viewer;

use super::booking::{Stored, store_answer};
use super::{AnswerOutcome, audit_and_tell, find_question, niche_of, not_waiting};
use entity::agent_questions::WAITING;

/// "Not enough context" or "ask the agent to research more": free, recorded, one row per person.
pub(super) async fn decline(
    txn: &WriteTxn,
    viewer: &Viewer,
    question: &agent_questions::Model,
    valid: &ValidAnswer,
    now: DateTime<Utc>,
) -> Result<AnswerOutcome, ServiceError> {
    let mut update = agent_questions::Entity::update_many()
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now));
    if valid.kind == Kind::NeedsResearch {
        update = update.col_expr(
            agent_questions::Column::Status,
            Expr::value(QuestionStatus::Researching),
        );
    }
    // Conditional like the winning answer, so a decline never lands on a settled question.
    let touched = update
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(agent_questions::Column::Status.is_in(WAITING))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
        .exec(txn)
        .await?;
    if touched.rows_affected == 0 {
        return Err(not_waiting(&find_question(txn, question.id).await?));
    }
    let answer = store_answer(txn, viewer, question, valid, Stored::default(), now).await?;
    let (action, notice) = match valid.kind {
        Kind::NeedsResearch => (
            "question.research_requested",
            "Sent back to the agent for more research.",
        ),
        _ => (
            "question.declined",
            "Noted. It stays open for someone else.",
        ),
    };
    let actor = Actor::User(viewer.user_id);
    let detail = json!({ "answerId": answer.id });
    audit::record(
        txn,
        AuditEntry::about_question(&actor, action, question, detail),
        now,
    )
    .await?;
    if valid.kind == Kind::InsufficientContext {
        tell_if_context_is_needed(txn, question, now).await?;
    }
    if valid.kind == Kind::NeedsResearch {
        outbox::enqueue(
            txn,
            NewEvent::about_question(
                EventType::ResearchRequested,
                question,
                Some(viewer.user_id),
                json!({ "note": valid.body }),
            ),
            now,
        )
        .await?;
    }
    Ok(AnswerOutcome {
        answer,
        question: find_question(txn, question.id).await?,
        points: 0,
        contribution_status: None,
        notice: notice.to_owned(),
    })
}

/// Declines speak (docs/contract.md#events-for-the-agent): when this round's "not enough context"
/// declines reach the niche's `declines_to_notify` (or every active operator's, when there are
/// fewer), the agent is told once per round with `expert_question.needs_context`. The question's
/// `needs_context_round` is claimed by one conditional update, so declines arriving together tell
/// it once.
pub(super) async fn tell_if_context_is_needed(
    txn: &WriteTxn,
    question: &agent_questions::Model,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let round = question.research_round;
    let declines = agent_answers::Entity::find()
        .filter(agent_answers::Column::QuestionId.eq(question.id))
        .filter(agent_answers::Column::Kind.eq(AnswerKind::InsufficientContext))
        .filter(agent_answers::Column::ResearchRound.eq(round))
        .count(txn)
        .await?;
    let niche = niche_of(txn, question).await?;
    let operators = niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::Status.eq(MemberStatus::Active))
        .filter(niche_members::Column::Role.ne(MemberRole::Observer))
        .count(txn)
        .await?;
    let threshold = niche
        .declines_to_notify
        .min(i64::try_from(operators).unwrap_or(i64::MAX))
        .max(1);
    if i64::try_from(declines).unwrap_or(i64::MAX) < threshold {
        return Ok(());
    }
    let claimed = agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::NeedsContextRound,
            Expr::value(Some(round)),
        )
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(
            Condition::any()
                .add(agent_questions::Column::NeedsContextRound.is_null())
                .add(agent_questions::Column::NeedsContextRound.lt(round)),
        )
        .exec(txn)
        .await?;
    if claimed.rows_affected == 0 {
        return Ok(());
    }
    let said = json!({ "round": round, "declines": declines });
    audit_and_tell(
        txn,
        AuditEntry::about_question(
            &Actor::System,
            "question.needs_context",
            question,
            said.clone(),
        ),
        NewEvent::about_question(EventType::NeedsContext, question, None, said),
        now,
    )
    .await
}
