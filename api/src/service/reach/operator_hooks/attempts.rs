//! What a webhook's owner may do with its deliveries: send a test event (rate limited per webhook
//! and per person) and read the recent attempts, told no more than a member may know.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::deliveries;
use entity::{niches, operator_webhooks};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder,
};
use serde_json::json;

use super::events::{HookEvent, row};
use super::registration::{may_hear, no_longer_a_member, own_hook};
use crate::domain::addresses::NOT_PUBLIC;
use crate::domain::delivery::{TestSendLimits, next_test_send};
use crate::error::{ServiceError, TEST_SENDS_PER_PERSON, TEST_SENDS_PER_WEBHOOK};
use crate::service::people::access::Viewer;

/// Queue a test event to one of the viewer's webhooks (`question.waiting` with `test: true` and
/// no question), sent once and never retried. At most `limits.per_webhook` per webhook and
/// `limits.per_person` per person within `limits.window`; past either, `RATE_LIMITED` says when
/// the next may go.
pub async fn send_test(
    db: &Db,
    viewer: &Viewer,
    id: i64,
    limits: &TestSendLimits,
    now: DateTime<Utc>,
) -> Result<deliveries::Model, ServiceError> {
    use sea_orm::QuerySelect;
    let txn = db.begin_write().await?;
    let hook = own_hook(&txn, viewer, id).await?;
    if !may_hear(&txn, viewer, hook.niche_id).await? {
        return Err(no_longer_a_member());
    }
    // One person's test sends queue here, so two at once cannot both fit the last place (on
    // SQLite the write transaction is already the only one).
    if txn.get_database_backend() == sea_orm::DbBackend::Postgres {
        entity::users::Entity::find_by_id(viewer.user_id)
            .select_only()
            .column(entity::users::Column::Id)
            .lock_exclusive()
            .into_tuple::<i64>()
            .one(&txn)
            .await?;
    }
    let since = now - chrono::Duration::from_std(limits.window).unwrap_or(chrono::Duration::MAX);
    let recent_tests = |limit: u32| {
        deliveries::Entity::find()
            .select_only()
            .column(deliveries::Column::CreatedAt)
            .filter(deliveries::Column::SingleAttempt.eq(true))
            .filter(deliveries::Column::CreatedAt.gt(since))
            .order_by_desc(deliveries::Column::CreatedAt)
            .limit(u64::from(limit.max(1)))
    };
    let this_hook: Vec<DateTime<Utc>> = recent_tests(limits.per_webhook)
        .filter(deliveries::Column::WebhookId.eq(hook.id))
        .into_tuple()
        .all(&txn)
        .await?;
    let mut own_hooks = sea_orm::sea_query::Query::select();
    own_hooks
        .column(operator_webhooks::Column::Id)
        .from(operator_webhooks::Entity)
        .and_where(operator_webhooks::Column::UserId.eq(viewer.user_id));
    let all_hooks: Vec<DateTime<Utc>> = recent_tests(limits.per_person)
        .filter(deliveries::Column::WebhookId.in_subquery(own_hooks))
        .into_tuple()
        .all(&txn)
        .await?;
    let minutes = limits.window.as_secs().div_ceil(60);
    for (sent, limit, reason, whose) in [
        (
            &this_hook,
            limits.per_webhook,
            TEST_SENDS_PER_WEBHOOK,
            "this webhook was",
        ),
        (
            &all_hooks,
            limits.per_person,
            TEST_SENDS_PER_PERSON,
            "your webhooks were",
        ),
    ] {
        // The newest `limit` within the window, newest first: once the last of them leaves the
        // window, one more fits.
        let count = u64::try_from(sent.len()).unwrap_or(u64::MAX);
        if let Some(wait) = next_test_send(count, limit, sent.last().copied(), limits.window, now) {
            return Err(ServiceError::RateLimited {
                message: format!(
                    "{whose} sent {limit} test events in the last {minutes} minutes; try again in {} s",
                    wait.as_secs()
                ),
                reason,
                retry_after: wait,
            });
        }
    }
    let niche = niches::Entity::find_by_id(hook.niche_id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::NotFound("that webhook's niche is gone".into()))?;
    let fields = json!({
        "test": true,
        "questionId": null,
        "title": "A test from askloop's settings page",
        "urgency": "normal",
        "expiresAt": null,
        "url": "/dashboard/settings",
    });
    let delivery = row(&hook, HookEvent::Waiting, &niche, None, fields, true, now)
        .insert(&txn)
        .await?;
    txn.commit().await?;
    Ok(delivery)
}

/// A delivery to a webhook as its owner sees it.
#[derive(Debug, Clone)]
pub struct OwnerView {
    /// The row.
    pub delivery: deliveries::Model,
    /// What its last attempt came to, as far as its owner may know: the HTTP status, that the
    /// address was refused, or that no response came — never a resolver's or connection's
    /// words, which would tell a member what askloop's network looks like.
    pub last_error: Option<String>,
}

/// What the owner of a webhook is told of `delivery`'s last attempt.
pub fn shown_error(delivery: &deliveries::Model) -> Option<String> {
    let error = delivery.last_error.as_deref()?;
    if error == NOT_PUBLIC {
        return Some(NOT_PUBLIC.to_owned());
    }
    Some(match delivery.last_status_code {
        Some(code) => format!("HTTP {code}"),
        None => "no response".to_owned(),
    })
}

/// The most recent deliveries to one of the viewer's webhooks, newest first; refused once the
/// viewer is no longer an active member of its niche.
pub async fn recent_deliveries(
    db: &Db,
    viewer: &Viewer,
    id: i64,
    limit: u64,
) -> Result<Vec<OwnerView>, ServiceError> {
    use sea_orm::QuerySelect;
    let hook = own_hook(db, viewer, id).await?;
    if !may_hear(db, viewer, hook.niche_id).await? {
        return Err(no_longer_a_member());
    }
    Ok(deliveries::Entity::find()
        .filter(deliveries::Column::WebhookId.eq(hook.id))
        .order_by_desc(deliveries::Column::Id)
        .limit(limit.min(50))
        .all(db)
        .await?
        .into_iter()
        .map(|delivery| OwnerView {
            last_error: shown_error(&delivery),
            delivery,
        })
        .collect())
}
