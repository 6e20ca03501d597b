//! What the delivery worker and the membership changes ask of operator webhooks: where a
//! delivery goes and whether its owner may still hear of the niche, and dropping what waits for
//! an owner who leaves.

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Utc};
use entity::deliveries::{self, DeliveryStatus};
use entity::operator_webhooks;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::OWNER_DEPARTED;
use crate::domain::sealing::{self, DataKey};
use crate::error::ServiceError;
use crate::service::people::access;

/// Inside the transaction that takes `user_id` out of `niche_id` (suspended, left): what waits
/// for their webhooks of that niche is dropped, with the reason on each. An admin keeps hearing.
pub async fn drop_for_departed(
    txn: &WriteTxn,
    user_id: i64,
    niche_id: i64,
    now: DateTime<Utc>,
) -> Result<u64, ServiceError> {
    let mut theirs = sea_orm::sea_query::Query::select();
    theirs
        .column(operator_webhooks::Column::Id)
        .from(operator_webhooks::Entity)
        .and_where(operator_webhooks::Column::UserId.eq(user_id))
        .and_where(operator_webhooks::Column::NicheId.eq(niche_id));
    let dropped = deliveries::Entity::update_many()
        .col_expr(
            deliveries::Column::Status,
            Expr::value(DeliveryStatus::Dropped),
        )
        .col_expr(
            deliveries::Column::DroppedReason,
            Expr::value(Some(OWNER_DEPARTED.to_owned())),
        )
        // A worker sending one right now finds its claim gone and changes nothing more.
        .col_expr(deliveries::Column::ClaimToken, Expr::value(None::<String>))
        .col_expr(
            deliveries::Column::ClaimedUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(deliveries::Column::UpdatedAt, Expr::value(now))
        .filter(deliveries::Column::WebhookId.in_subquery(theirs))
        .filter(deliveries::Column::Status.eq(DeliveryStatus::Pending))
        .exec(txn)
        .await?;
    Ok(dropped.rows_affected)
}

/// Where a webhook's deliveries go, and whether they may go now.
#[derive(Debug, Clone)]
pub struct HookDestination {
    /// The URL.
    pub url: String,
    /// The signing secret.
    pub secret: String,
    /// Whether its owner is an admin: an admin's webhook may reach private addresses (a chat
    /// bridge on the same network); a member's reaches only public ones.
    pub owner_is_admin: bool,
    /// Whether its owner may still hear of its niche; if not, its deliveries are dropped.
    pub owner_may_hear: bool,
}

/// Where a delivery of `webhook_id` goes, if the webhook is still live.
pub async fn destination(
    db: &Db,
    key: Option<&DataKey>,
    webhook_id: i64,
) -> Result<Option<HookDestination>, ServiceError> {
    let Some(hook) = operator_webhooks::Entity::find_by_id(webhook_id)
        .filter(operator_webhooks::Column::RevokedAt.is_null())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let secret = sealing::reveal(key, &hook.secret).map_err(|e| {
        ServiceError::Internal(anyhow::anyhow!("an operator webhook's secret: {e}"))
    })?;
    let owner_is_admin = entity::users::Entity::find_by_id(hook.user_id)
        .one(db)
        .await?
        .is_some_and(|owner| owner.role == entity::users::UserRole::Admin);
    let owner_may_hear = owner_is_admin
        || access::who_may_hear(db, &[hook.user_id], hook.niche_id)
            .await?
            .contains(&hook.user_id);
    Ok(Some(HookDestination {
        url: hook.url,
        secret,
        owner_is_admin,
        owner_may_hear,
    }))
}
