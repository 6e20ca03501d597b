//! Research comes back (docs/contract.md#research-results): a question sent back to the agent
//! returns to the queue with its new context, and reappears for the people who had declined it.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::agent_questions::{self, QuestionStatus};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{Value, json};

use crate::domain::intake::NicheRef;
use crate::domain::text::{CONTEXT_MAX, IDENTIFIER_MAX, cap, char_len};
use crate::error::{Conflict, ServiceError};
use crate::live::ChangeHint;
use crate::service::agents::Asker;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::lookup::asked_by;
use crate::service::niches::find_niche;

/// Research results as the agent sent them.
#[derive(Debug, Clone)]
pub struct ResearchResult {
    /// The niche.
    pub niche: NicheRef,
    /// The agent's id for the question.
    pub external_id: String,
    /// The new context (untrusted; capped).
    pub context: String,
}

/// Parse `{nicheSlug, externalId, context}` (or inside `payload`).
pub fn parse(body: &Value) -> Result<ResearchResult, ServiceError> {
    let fields = body
        .get("payload")
        .filter(|p| p.is_object())
        .unwrap_or(body);
    let bad = |m: &str| ServiceError::BadInput(m.to_owned());
    let text = |key: &str| {
        fields
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let niche = match (
        text("nicheSlug").or(text("niche")),
        fields.get("nicheId").and_then(Value::as_i64),
    ) {
        (Some(slug), _) => NicheRef::Slug(slug.to_lowercase()),
        (None, Some(id)) => NicheRef::Id(id),
        (None, None) => return Err(bad("nicheSlug is required")),
    };
    let external_id = text("externalId").ok_or_else(|| bad("externalId is required"))?;
    // No question's id is longer (intake refuses those); refused here rather than looked up
    // and echoed back in a 404.
    if char_len(external_id) > IDENTIFIER_MAX {
        return Err(ServiceError::BadInput(format!(
            "externalId is longer than {IDENTIFIER_MAX} characters"
        )));
    }
    Ok(ResearchResult {
        niche,
        external_id: external_id.to_owned(),
        context: cap(
            text("context").ok_or_else(|| bad("context is required"))?,
            CONTEXT_MAX,
        ),
    })
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
    crate::service::escalation::restart(&txn, &question, now).await?;
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
    txn.commit().await?;
    hint.changed();
    Ok(updated)
}

/// `context` with `findings` appended as a section headed by the time they came back.
pub fn with_findings(context: Option<&str>, findings: &str, now: DateTime<Utc>) -> String {
    let heading = format!("Research, {} UTC:", now.format("%Y-%m-%d %H:%M"));
    match context.filter(|c| !c.trim().is_empty()) {
        Some(context) => format!("{context}\n\n{heading}\n{findings}"),
        None => format!("{heading}\n{findings}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_follow_the_context_under_a_dated_heading() {
        let at = DateTime::parse_from_rfc3339("2026-11-30T14:05:09Z")
            .expect("a time")
            .with_timezone(&Utc);
        assert_eq!(
            with_findings(Some("Steam says June."), "The publisher says July.", at),
            "Steam says June.\n\nResearch, 2026-11-30 14:05 UTC:\nThe publisher says July."
        );
        assert_eq!(
            with_findings(None, "Found it.", at),
            "Research, 2026-11-30 14:05 UTC:\nFound it."
        );
        assert_eq!(
            with_findings(Some("  "), "Found it.", at),
            "Research, 2026-11-30 14:05 UTC:\nFound it."
        );
    }

    /// Found by the research property (tests/suite/properties.rs): an external id of any
    /// length was accepted, though no question can have one over 200 characters.
    #[test]
    fn an_external_id_over_200_characters_is_refused() {
        let body = |id: String| json!({"nicheSlug": "g", "externalId": id, "context": "found"});
        let kept = parse(&body(format!(" {} ", "🦀".repeat(200))))
            .expect("200 characters")
            .external_id;
        assert_eq!(kept, "🦀".repeat(200));
        let err = parse(&body("x".repeat(201))).expect_err("201").to_string();
        assert_eq!(err, "externalId is longer than 200 characters");
    }
}
