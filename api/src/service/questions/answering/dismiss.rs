//! Dismissing a question an admin judges not worth an answer, with its reason.

use chrono::{DateTime, Utc};
use entity::agent_questions;
use serde_json::json;

use crate::db::Db;
use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::agents::outbox::{EventType, NewEvent};
use crate::service::audit::{Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

use super::{
    Closing, close_if_waiting, find_question, is_waiting, niche_of, not_waiting, record_closing,
};

/// The longest reason for a dismissal, in characters.
pub const DISMISS_REASON_MAX: usize = 500;

/// A dismissal's reason as given: trimmed, empty as none; refused when too long or holding
/// control characters.
pub(super) fn dismiss_reason(reason: Option<&str>) -> Result<Option<String>, ServiceError> {
    let Some(reason) = reason.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(None);
    };
    if crate::domain::text::char_len(reason) > DISMISS_REASON_MAX {
        return Err(ServiceError::BadInput(format!(
            "a reason is at most {DISMISS_REASON_MAX} characters"
        )));
    }
    crate::domain::text::checked("reason", reason, crate::domain::text::TextKind::Lines)?;
    Ok(Some(reason.to_owned()))
}

/// "Not worth anybody's time": an active non-observer member or an admin closes a waiting
/// question without an answer, optionally saying why (the agent hears the reason). No points.
pub async fn dismiss_question(
    db: &Db,
    hint: &ChangeHint,
    viewer: Option<&Viewer>,
    question_id: i64,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<agent_questions::Model, ServiceError> {
    let viewer = access::signed_in(viewer)?;
    let reason = dismiss_reason(reason)?;
    let question = find_question(db, question_id).await?;
    if !is_waiting(&question, now) {
        return Err(not_waiting(&question));
    }
    let niche = niche_of(db, &question).await?;
    if !viewer.is_admin
        && !access::acts_on_questions(access::membership(db, viewer, niche.id).await?.as_ref())
    {
        return Err(access::not_a_member(&niche));
    }
    let txn = db.begin_write().await?;
    let Some(closed) = close_if_waiting(&txn, question.id, Closing::Dismissed, now).await? else {
        let current = find_question(&txn, question.id).await?;
        txn.rollback().await?;
        return Err(not_waiting(&current));
    };
    let actor = Actor::User(viewer.user_id);
    record_closing(
        &txn,
        &question,
        AuditEntry::about_question(
            &actor,
            "question.dismissed",
            &question,
            json!({ "reason": reason }),
        ),
        NewEvent::about_question(
            EventType::QuestionDismissed,
            &question,
            Some(viewer.user_id),
            json!({ "dismissedBy": viewer.handle, "reason": reason }),
        ),
        now,
    )
    .await?;
    txn.commit().await?;
    hint.changed();
    Ok(closed)
}
