//! Expiry (docs/contract.md#expiry): a waiting question whose time has passed is expired, once,
//! with its audit row and the `expert_question.expired` event in the same transaction. The change
//! is conditional (still waiting, time passed), so sweepers on several instances can race and each
//! question still expires exactly once.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::agent_questions;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::json;

use crate::error::ServiceError;
use crate::live::ChangeHint;
use crate::service::agents::outbox::{EventType, NewEvent};
use crate::service::audit::{Actor, AuditEntry};
use crate::service::questions::answering::{Closing, close_if_waiting, record_closing};
use entity::agent_questions::WAITING;

/// Expire up to `limit` waiting questions whose time passed by `now`; how many this call
/// expired (another instance may have taken some).
pub async fn sweep(
    db: &Db,
    hint: &ChangeHint,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<usize, ServiceError> {
    let due = agent_questions::Entity::find()
        .filter(agent_questions::Column::Status.is_in(WAITING))
        .filter(agent_questions::Column::ExpiresAt.lte(now))
        .order_by_asc(agent_questions::Column::ExpiresAt)
        .limit(limit)
        .all(db)
        .await?;
    let mut expired = 0;
    for question in due {
        let txn = db.begin_write().await?;
        let Some(closed) = close_if_waiting(&txn, question.id, Closing::Expired, now).await? else {
            txn.rollback().await?;
            continue;
        };
        record_closing(
            &txn,
            &question,
            AuditEntry::about_question(
                &Actor::System,
                "question.expired",
                &question,
                json!({ "expiresAt": question.expires_at }),
            ),
            NewEvent::about_question(
                EventType::QuestionExpired,
                &question,
                None,
                json!({ "expiredAt": now }),
            ),
            now,
        )
        .await?;
        // A several-answer question that expires with answers in concludes with what came.
        if closed.answers_in > 0 {
            crate::service::questions::consensus::conclude(&txn, &closed, now).await?;
            crate::service::knowledge::record_concluded(&txn, closed.id, now).await?;
        }
        txn.commit().await?;
        hint.changed();
        expired += 1;
    }
    Ok(expired)
}
