//! What a question's change writes for the operator webhooks of its niche: one `deliveries` row
//! per webhook whose owner may hear of it, in the transaction that causes it
//! (docs/contract.md#operator-webhooks).

use crate::db::WriteTxn;
use chrono::{DateTime, Utc};
use entity::agent_questions::{self, Urgency};
use entity::deliveries::{self, DeliveryStatus};
use entity::{niches, operator_webhooks};
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};
use serde_json::json;

use super::TITLE_MAX;
use crate::domain::text::cap;
use crate::error::ServiceError;
use crate::service::people::access;

/// Which event a webhook hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// A new question is waiting.
    Waiting,
    /// A question escalated (step 1).
    Escalated,
}

impl HookEvent {
    /// The event's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::Waiting => "question.waiting",
            HookEvent::Escalated => "question.escalated",
        }
    }
}

/// What a webhook body says of a question.
#[derive(Debug, Clone)]
pub struct QuestionFacts {
    /// Its id.
    pub id: i64,
    /// Its title.
    pub title: String,
    /// Its urgency.
    pub urgency: Urgency,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
}

impl QuestionFacts {
    /// From a stored question.
    pub fn of(question: &agent_questions::Model) -> Self {
        Self {
            id: question.id,
            title: question.title.clone(),
            urgency: question.urgency,
            expires_at: question.expires_at,
        }
    }
}

/// The question page's path; the worker makes it absolute with the public origin when it sends.
pub fn question_path(niche_slug: &str, question_id: i64) -> String {
    format!("/dashboard/niches/{niche_slug}/questions/{question_id}")
}

/// Write one delivery per live webhook of `niche` and question in `questions`, on `txn`.
pub async fn enqueue(
    txn: &WriteTxn,
    event: HookEvent,
    niche: &niches::Model,
    questions: &[QuestionFacts],
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if questions.is_empty() {
        return Ok(());
    }
    let mut hooks = operator_webhooks::Entity::find()
        .filter(operator_webhooks::Column::NicheId.eq(niche.id))
        .filter(operator_webhooks::Column::RevokedAt.is_null())
        .all(txn)
        .await?;
    if hooks.is_empty() {
        return Ok(());
    }
    let owners: Vec<i64> = hooks.iter().map(|h| h.user_id).collect();
    let may_hear = access::who_may_hear(txn, &owners, niche.id).await?;
    hooks.retain(|hook| may_hear.contains(&hook.user_id));
    if hooks.is_empty() {
        return Ok(());
    }
    let mut rows = Vec::with_capacity(hooks.len() * questions.len());
    for hook in &hooks {
        for question in questions {
            rows.push(row(
                hook,
                event,
                niche,
                Some(question.id),
                body_fields(question, niche),
                false,
                now,
            ));
        }
    }
    deliveries::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

fn body_fields(question: &QuestionFacts, niche: &niches::Model) -> serde_json::Value {
    json!({
        "questionId": question.id,
        "title": cap(&plain(&question.title), TITLE_MAX),
        "urgency": crate::service::reach::urgency_name(question.urgency),
        "expiresAt": question.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "url": question_path(&niche.slug, question.id),
    })
}

/// One line of plain text: control characters become spaces, and the invisible marks that
/// reorder text (bidi embeddings, overrides, isolates) are left out, so a title cannot make a
/// subject line or a chat message read backwards.
pub fn plain(text: &str) -> String {
    text.chars()
        .filter(|c| !is_bidi_control(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

pub(super) fn row(
    hook: &operator_webhooks::Model,
    event: HookEvent,
    niche: &niches::Model,
    question_id: Option<i64>,
    fields: serde_json::Value,
    single_attempt: bool,
    now: DateTime<Utc>,
) -> deliveries::ActiveModel {
    let envelope_id = format!("evt_{}", uuid::Uuid::new_v4().simple());
    let mut body = json!({
        "id": envelope_id,
        "type": event.as_str(),
        "niche": niche.slug,
    });
    if let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) {
        body.extend(fields.clone());
    }
    deliveries::ActiveModel {
        id: NotSet,
        envelope_id: Set(envelope_id),
        event_type: Set(event.as_str().to_owned()),
        niche_id: Set(niche.id),
        question_id: Set(question_id),
        agent_id: Set(None),
        webhook_id: Set(Some(hook.id)),
        body: Set(body.to_string()),
        status: Set(DeliveryStatus::Pending),
        attempts: Set(0),
        next_attempt_at: Set(now),
        claim_token: Set(None),
        claimed_until: Set(None),
        last_status_code: Set(None),
        last_error: Set(None),
        retry_from: Set(now),
        delivered_at: Set(None),
        dropped_reason: Set(None),
        single_attempt: Set(single_attempt),
        push_config_id: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
}
