//! Research comes back (docs/contract.md#research-results): a question sent back to the agent
//! returns to the queue with its new context, and reappears for the people who had declined it.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::agent_questions::{self, QuestionStatus};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::domain::text::{CONTEXT_MAX, char_len};
use crate::error::{Conflict, ServiceError};
use crate::live::ChangeHint;
use crate::service::agents::registry::Asker;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::niches::find_niche;
use crate::service::questions::lookup::asked_by;

pub use crate::domain::research::{ResearchResult, with_findings};

/// Parse `{nicheSlug, externalId, context}` (or inside `payload`): 400 with what is wrong.
pub fn parse(body: &Value) -> Result<ResearchResult, ServiceError> {
    crate::domain::research::parse(body).map_err(ServiceError::BadInput)
}

/// Research comes back for a waiting question (sent back for research, or still open): its
/// findings are appended to the context as a dated section (earlier text is never rewritten;
/// findings that would take the context past its cap are refused), the round advances so those
/// who declined see it again, and a researching question is open again.
///
/// An agent adds research only to questions it asked; another agent's is not found (404).
pub async fn research_returned(
    db: &Db,
    hint: &ChangeHint,
    asker: &Asker,
    result: ResearchResult,
    now: DateTime<Utc>,
) -> Result<agent_questions::Model, ServiceError> {
    let niche = find_niche(db, &result.niche)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such niche".into()))?;
    let found = agent_questions::Entity::find()
        .filter(agent_questions::Column::NicheId.eq(niche.id))
        .filter(agent_questions::Column::ExternalId.eq(result.external_id.as_str()))
        .filter(asked_by(asker))
        .one(db)
        .await?
        .ok_or_else(|| {
            ServiceError::NotFound(format!(
                "no question '{}' in '{}'",
                result.external_id, niche.slug
            ))
        })?;
    add_findings(db, hint, &found, &result.context, now).await
}

/// Append `findings` (capped already) to `found`, a question the caller has established is the
/// asking agent's own, as [`research_returned`] describes: the REST route and the MCP tool
/// `add_research` both end here.
pub async fn add_findings(
    db: &Db,
    hint: &ChangeHint,
    found: &agent_questions::Model,
    findings: &str,
    now: DateTime<Utc>,
) -> Result<agent_questions::Model, ServiceError> {
    let txn = db.begin_write().await?;
    // Read again in the writing transaction: the section goes after the context as it is now.
    let question = agent_questions::Entity::find_by_id(found.id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question vanished")))?;
    let waiting = [QuestionStatus::Open, QuestionStatus::Researching];
    if !waiting.contains(&question.status) || question.expires_at <= now {
        txn.rollback().await?;
        return Err(Conflict::NotAwaitingResearch.into());
    }
    let context = with_findings(question.context.as_deref(), findings, now);
    if char_len(&context) > CONTEXT_MAX {
        txn.rollback().await?;
        return Err(ServiceError::BadInput(format!(
            "with these findings the question's context would pass {CONTEXT_MAX} characters; \
             send them shorter (earlier findings are never cut)"
        )));
    }
    let reopened = agent_questions::Entity::update_many()
        .col_expr(
            agent_questions::Column::Status,
            Expr::value(QuestionStatus::Open),
        )
        .col_expr(agent_questions::Column::Context, Expr::value(Some(context)))
        .col_expr(
            agent_questions::Column::ResearchRound,
            Expr::col(agent_questions::Column::ResearchRound).add(1),
        )
        .col_expr(agent_questions::Column::UpdatedAt, Expr::value(now))
        .filter(agent_questions::Column::Id.eq(question.id))
        .filter(agent_questions::Column::ResearchRound.eq(question.research_round))
        .filter(agent_questions::Column::Status.is_in(waiting))
        .filter(agent_questions::Column::ExpiresAt.gt(now))
        .exec(&txn)
        .await?;
    if reopened.rows_affected == 0 {
        txn.rollback().await?;
        return Err(Conflict::NotAwaitingResearch.into());
    }
    // Back from research, it waits for people again: its escalation clock starts over.
    crate::service::questions::escalation::restart(&txn, &question, now).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::Agent(question.agent_id.clone()),
            action: "question.research_returned",
            subject_type: "question",
            subject_id: question.id,
            niche_id: Some(question.niche_id),
            detail: json!({ "round": question.research_round + 1 }),
        },
        now,
    )
    .await?;
    let updated = agent_questions::Entity::find_by_id(question.id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("question vanished")))?;
    // Its A2A task is working again (docs/contract.md#a2a).
    crate::service::agents::a2a_tasks::enqueue_pushes(
        &txn,
        question.id,
        "research.returned",
        &json!({ "questionId": question.id, "round": updated.research_round }),
        now,
    )
    .await?;
    txn.commit().await?;
    hint.changed();
    Ok(updated)
}
