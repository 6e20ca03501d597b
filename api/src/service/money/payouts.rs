//! Payouts (docs/contract.md#revenue-and-payouts). A person saves where to be paid (changing it
//! clears verification), an admin verifies it, then schedules a payout: every owed allocation of
//! that person in one currency, claimed by a conditional update so two admins scheduling at once
//! make one payout. A payout is then paid (with a unique external reference) or failed (its
//! allocations are owed again). askloop moves no money itself; every step is audited.

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Utc};
use entity::allocations::{self, AllocationStatus};
use entity::payouts::{self, PayoutStatus};
use entity::{payout_accounts, revenue_events, users};
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter, QueryOrder,
    QuerySelect, SqlErr,
};
use serde_json::json;

use crate::domain::text::char_len;
use crate::error::{Conflict, ServiceError};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

/// The longest payout address kept.
pub const ADDRESS_MAX: usize = 200;

async fn audit_payout(
    txn: &WriteTxn,
    admin: &Viewer,
    action: &str,
    subject_id: i64,
    detail: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    audit::record(
        txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action,
            subject_type: "payout",
            subject_id,
            niche_id: None,
            detail,
        },
        now,
    )
    .await?;
    Ok(())
}

/// Save where `viewer` wants to be paid. A changed address needs verifying again.
pub async fn set_address(
    db: &Db,
    viewer: &Viewer,
    address: &str,
    now: DateTime<Utc>,
) -> Result<payout_accounts::Model, ServiceError> {
    let address = crate::domain::text::one_line("address", address.trim())?;
    if address.is_empty() || char_len(address) > ADDRESS_MAX {
        return Err(ServiceError::BadInput(format!(
            "a payout address is 1 to {ADDRESS_MAX} characters"
        )));
    }
    let txn = db.begin_write().await?;
    let existing = payout_accounts::Entity::find()
        .filter(payout_accounts::Column::UserId.eq(viewer.user_id))
        .one(&txn)
        .await?;
    let saved = match existing {
        Some(account) if account.address == address => account,
        Some(account) => {
            let mut row: payout_accounts::ActiveModel = account.into();
            row.address = Set(address.to_owned());
            row.verified_at = Set(None);
            row.verified_by = Set(None);
            row.updated_at = Set(now);
            row.update(&txn).await?
        }
        None => {
            payout_accounts::ActiveModel {
                id: NotSet,
                user_id: Set(viewer.user_id),
                address: Set(address.to_owned()),
                verified_at: Set(None),
                verified_by: Set(None),
                updated_at: Set(now),
            }
            .insert(&txn)
            .await?
        }
    };
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action: "payout_account.saved",
            subject_type: "payout_account",
            subject_id: saved.id,
            niche_id: None,
            detail: json!({ "verified": saved.verified_at.is_some() }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(saved)
}

/// `user_id`'s payout account, if they saved one.
pub async fn account_of(
    db: &Db,
    user_id: i64,
) -> Result<Option<payout_accounts::Model>, ServiceError> {
    Ok(payout_accounts::Entity::find()
        .filter(payout_accounts::Column::UserId.eq(user_id))
        .one(db)
        .await?)
}

async fn user_id_of(db: &Db, handle: &str) -> Result<i64, ServiceError> {
    users::Entity::find()
        .filter(users::Column::Handle.eq(handle.trim().to_lowercase()))
        .one(db)
        .await?
        .map(|u| u.id)
        .ok_or_else(|| ServiceError::NotFound(format!("nobody is called '{handle}'")))
}

/// An admin verifies `handle`'s payout address: exactly `address`, the one they checked. If
/// the person changed it meanwhile, nothing is verified.
pub async fn verify_address(
    db: &Db,
    viewer: Option<&Viewer>,
    handle: &str,
    address: &str,
    now: DateTime<Utc>,
) -> Result<payout_accounts::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let user_id = user_id_of(db, handle).await?;
    if user_id == admin.user_id {
        return Err(ServiceError::SelfReview(
            "nobody verifies their own payout address: another admin must".into(),
        ));
    }
    let txn = db.begin_write().await?;
    let account = payout_accounts::Entity::find()
        .filter(payout_accounts::Column::UserId.eq(user_id))
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::from(Conflict::PayoutAddressMissing(handle.to_owned())))?;
    let marked = payout_accounts::Entity::update_many()
        .col_expr(payout_accounts::Column::VerifiedAt, Expr::value(Some(now)))
        .col_expr(
            payout_accounts::Column::VerifiedBy,
            Expr::value(Some(admin.user_id)),
        )
        .filter(payout_accounts::Column::Id.eq(account.id))
        .filter(payout_accounts::Column::Address.eq(address.trim()))
        .exec(&txn)
        .await?;
    if marked.rows_affected != 1 {
        return Err(Conflict::PayoutAddressChanged(handle.to_owned()).into());
    }
    let verified = payout_accounts::Entity::find_by_id(account.id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::Internal(anyhow::anyhow!("the account vanished")))?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin.user_id),
            action: "payout_account.verified",
            subject_type: "payout_account",
            subject_id: account.id,
            niche_id: None,
            detail: json!({ "userId": user_id, "address": account.address }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(verified)
}

/// Schedule a payout of every owed allocation of `handle` in `currency`. Needs a verified
/// address and something owed; of two admins scheduling at once, one makes the payout and the
/// other is told nothing is owed.
pub async fn schedule(
    db: &Db,
    viewer: Option<&Viewer>,
    handle: &str,
    currency: &str,
    now: DateTime<Utc>,
) -> Result<payouts::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let currency = currency.trim().to_ascii_uppercase();
    let user_id = user_id_of(db, handle).await?;
    let account = account_of(db, user_id)
        .await?
        .filter(|a| a.verified_at.is_some())
        .ok_or_else(|| ServiceError::from(Conflict::PayoutAddressUnverified(handle.to_owned())))?;
    let txn = db.begin_write().await?;
    let payout = payouts::ActiveModel {
        id: NotSet,
        user_id: Set(user_id),
        amount_minor: Set(0),
        currency: Set(currency.clone()),
        status: Set(PayoutStatus::Scheduled),
        address: Set(account.address.clone()),
        external_reference: Set(None),
        failure_reason: Set(None),
        created_by: Set(admin.user_id),
        created_at: Set(now),
        settled_at: Set(None),
    }
    .insert(&txn)
    .await?;
    let in_currency = Query::select()
        .column(revenue_events::Column::Id)
        .from(revenue_events::Entity)
        .and_where(revenue_events::Column::Currency.eq(currency.clone()))
        .to_owned();
    // The claim: only allocations still owed and in no payout. A concurrent claim waits for
    // this one's row locks and then finds nothing left.
    let claimed = allocations::Entity::update_many()
        .col_expr(
            allocations::Column::Status,
            Expr::value(AllocationStatus::Scheduled),
        )
        .col_expr(allocations::Column::PayoutId, Expr::value(Some(payout.id)))
        .col_expr(allocations::Column::UpdatedAt, Expr::value(now))
        .filter(allocations::Column::UserId.eq(user_id))
        .filter(allocations::Column::Status.eq(AllocationStatus::Accrued))
        .filter(allocations::Column::PayoutId.is_null())
        .filter(allocations::Column::RevenueEventId.in_subquery(in_currency))
        .exec(&txn)
        .await?;
    let amounts: Vec<i64> = allocations::Entity::find()
        .select_only()
        .column(allocations::Column::AmountMinor)
        .filter(allocations::Column::PayoutId.eq(payout.id))
        .into_tuple()
        .all(&txn)
        .await?;
    let amount: i64 = amounts.iter().sum();
    // Clawbacks are owed too (negative): a payout nets them, and is made only when the
    // person is owed more than they owe; otherwise what they owe stays as a negative balance.
    if claimed.rows_affected == 0 || amount <= 0 {
        txn.rollback().await?;
        return Err(Conflict::NothingOwed {
            handle: handle.to_owned(),
            currency: currency.to_owned(),
        }
        .into());
    }
    let mut row: payouts::ActiveModel = payout.into();
    row.amount_minor = Set(amount);
    let payout = row.update(&txn).await?;
    audit_payout(
        &txn,
        admin,
        "payout.scheduled",
        payout.id,
        json!({ "userId": user_id, "amountMinor": amount, "currency": currency, "allocations": claimed.rows_affected }),
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(payout)
}

async fn payout_by_id(txn: &WriteTxn, payout_id: i64) -> Result<payouts::Model, ServiceError> {
    payouts::Entity::find_by_id(payout_id)
        .one(txn)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such payout".into()))
}

async fn scheduled_payout(txn: &WriteTxn, payout_id: i64) -> Result<payouts::Model, ServiceError> {
    let payout = payouts::Entity::find_by_id(payout_id)
        .one(txn)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such payout".into()))?;
    if payout.status != PayoutStatus::Scheduled {
        return Err(Conflict::PayoutSettled(match payout.status {
            PayoutStatus::Paid => "paid",
            PayoutStatus::Failed => "failed",
            PayoutStatus::Scheduled => "scheduled",
        })
        .into());
    }
    Ok(payout)
}

/// How a scheduled payout ended.
enum Settlement<'a> {
    /// Paid, under the settlement's unique reference.
    Paid(&'a str),
    /// Failed, and why.
    Failed(&'a str),
}

/// Record that a scheduled payout was paid, under the settlement's unique reference.
pub async fn mark_paid(
    db: &Db,
    viewer: Option<&Viewer>,
    payout_id: i64,
    reference: &str,
    now: DateTime<Utc>,
) -> Result<payouts::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let reference = crate::domain::text::one_line("externalReference", reference.trim())?;
    if reference.is_empty() || char_len(reference) > 200 {
        return Err(ServiceError::BadInput(
            "the external reference is 1 to 200 characters".into(),
        ));
    }
    settle(db, admin, payout_id, Settlement::Paid(reference), now).await
}

/// Record that a scheduled payout failed: its allocations are owed again.
pub async fn mark_failed(
    db: &Db,
    viewer: Option<&Viewer>,
    payout_id: i64,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<payouts::Model, ServiceError> {
    let admin = access::admin(viewer)?;
    let reason = reason.trim();
    if reason.is_empty() || char_len(reason) > 1000 {
        return Err(ServiceError::BadInput(
            "say why, in 1 to 1000 characters".into(),
        ));
    }
    settle(db, admin, payout_id, Settlement::Failed(reason), now).await
}

/// End a scheduled payout. The change is conditional on it still being scheduled, so of two
/// settlements racing only one happens; its allocations move with it in the same transaction.
async fn settle(
    db: &Db,
    admin: &Viewer,
    payout_id: i64,
    settlement: Settlement<'_>,
    now: DateTime<Utc>,
) -> Result<payouts::Model, ServiceError> {
    let txn = db.begin_write().await?;
    let payout = scheduled_payout(&txn, payout_id).await?;
    if payout.user_id == admin.user_id {
        txn.rollback().await?;
        return Err(ServiceError::SelfReview(
            "nobody settles a payout to themselves: another admin must".into(),
        ));
    }
    let (status, reference, reason) = match settlement {
        Settlement::Paid(reference) => (PayoutStatus::Paid, Some(reference), None),
        Settlement::Failed(reason) => (PayoutStatus::Failed, None, Some(reason)),
    };
    let settled = payouts::Entity::update_many()
        .col_expr(payouts::Column::Status, Expr::value(status))
        .col_expr(
            payouts::Column::ExternalReference,
            Expr::value(reference.map(str::to_owned)),
        )
        .col_expr(
            payouts::Column::FailureReason,
            Expr::value(reason.map(str::to_owned)),
        )
        .col_expr(payouts::Column::SettledAt, Expr::value(Some(now)))
        .filter(payouts::Column::Id.eq(payout_id))
        .filter(payouts::Column::Status.eq(PayoutStatus::Scheduled))
        .exec(&txn)
        .await;
    match settled {
        Ok(result) if result.rows_affected == 1 => {}
        Ok(_) => {
            return Err(Conflict::PayoutSettled("settled").into());
        }
        Err(err) if matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) => {
            return Err(
                Conflict::PayoutReferenceTaken(reference.unwrap_or_default().to_owned()).into(),
            );
        }
        Err(err) => return Err(err.into()),
    }
    let inside: Vec<i64> = allocations::Entity::find()
        .select_only()
        .column(allocations::Column::Id)
        .filter(allocations::Column::PayoutId.eq(payout_id))
        .into_tuple()
        .all(&txn)
        .await?;
    let mut allocations_move = allocations::Entity::update_many()
        .col_expr(allocations::Column::UpdatedAt, Expr::value(now))
        .filter(allocations::Column::PayoutId.eq(payout_id));
    let (action, detail) = if status == PayoutStatus::Paid {
        allocations_move = allocations_move.col_expr(
            allocations::Column::Status,
            Expr::value(AllocationStatus::Paid),
        );
        (
            "payout.paid",
            json!({ "externalReference": reference, "allocations": inside }),
        )
    } else {
        // Owed again, and in no payout: the next schedule gathers them.
        allocations_move = allocations_move
            .col_expr(
                allocations::Column::Status,
                Expr::value(AllocationStatus::Accrued),
            )
            .col_expr(allocations::Column::PayoutId, Expr::value(None::<i64>));
        (
            "payout.failed",
            json!({ "reason": reason, "allocationsOwedAgain": inside }),
        )
    };
    allocations_move.exec(&txn).await?;
    audit_payout(&txn, admin, action, payout_id, detail, now).await?;
    let payout = payout_by_id(&txn, payout_id).await?;
    txn.commit().await?;
    Ok(payout)
}

/// Payouts, newest first: one person's, or everyone's.
pub async fn list(
    db: &Db,
    user_id: Option<i64>,
    limit: u64,
) -> Result<Vec<payouts::Model>, ServiceError> {
    let mut query = payouts::Entity::find();
    if let Some(user_id) = user_id {
        query = query.filter(payouts::Column::UserId.eq(user_id));
    }
    Ok(query
        .order_by_desc(payouts::Column::Id)
        .limit(limit)
        .all(db)
        .await?)
}

/// Every payout account with its holder's handle, unverified first (for admins).
pub async fn accounts(db: &Db) -> Result<Vec<(payout_accounts::Model, String)>, ServiceError> {
    let rows = payout_accounts::Entity::find()
        .order_by_desc(payout_accounts::Column::UpdatedAt)
        .all(db)
        .await?;
    let handles =
        crate::service::people::names::handles(db, rows.iter().map(|a| a.user_id)).await?;
    let mut listed: Vec<_> = rows
        .into_iter()
        .map(|a| {
            let handle = handles.get(&a.user_id).cloned().unwrap_or_default();
            (a, handle)
        })
        .collect();
    listed.sort_by_key(|(a, _)| a.verified_at.is_some());
    Ok(listed)
}
