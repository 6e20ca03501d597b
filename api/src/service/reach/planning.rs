//! The notification rows: planned inside the transactions that make a question wait or
//! escalate it, dropped when a person leaves a niche, and placed by the mail worker through the
//! rules in [`crate::domain::placement`].

use chrono::{DateTime, Utc};
use entity::{notification_preferences, notification_settings, notifications};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use crate::db::{WriteTxn, statement};
use crate::domain::placement::{Recipient, Wanted};
use crate::error::ServiceError;

/// A person's settings as the planner reads them: from their settings row (UTC, no quiet hours,
/// where it says nothing usable).
pub fn recipient_of(row: Option<&notification_settings::Model>) -> Recipient {
    Recipient {
        tz: row
            .and_then(|r| r.time_zone.parse().ok())
            .unwrap_or(chrono_tz::UTC),
        quiet: row.and_then(|r| Some((r.quiet_start_minute?, r.quiet_end_minute?))),
        quiet_includes_high: row.is_some_and(|r| r.quiet_includes_high),
    }
}

/// What a person asked for about a niche: their preference row, or the defaults without one.
pub fn wanted_of(row: Option<&notification_preferences::Model>) -> Wanted {
    row.map_or_else(Wanted::default, |p| {
        Wanted::from_stored(p.enabled, &p.immediate_urgencies, &p.digest)
    })
}

/// Inside the transaction that takes `user_id` out of `niche_id`: the mail waiting to tell them
/// of its questions is not sent.
pub async fn drop_mail_for_departed(
    txn: &WriteTxn,
    user_id: i64,
    niche_id: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    notifications::Entity::update_many()
        .col_expr(
            notifications::Column::Status,
            sea_orm::sea_query::Expr::value("dropped"),
        )
        .col_expr(
            notifications::Column::ClaimToken,
            sea_orm::sea_query::Expr::value(None::<String>),
        )
        .col_expr(
            notifications::Column::UpdatedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(notifications::Column::UserId.eq(user_id))
        .filter(notifications::Column::NicheId.eq(niche_id))
        .filter(notifications::Column::Status.is_in(["planned", "pending"]))
        .exec(txn)
        .await?;
    Ok(())
}

/// Inside the transaction that stored `question_ids`: one planned notification per question and
/// per active operator or specialist of its niche whose address is verified and who has not
/// turned its mail off.
pub async fn plan_for_new_questions(
    txn: &WriteTxn,
    question_ids: &[i64],
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if question_ids.is_empty() {
        return Ok(());
    }
    let marks = vec!["?"; question_ids.len()].join(", ");
    let sql = format!(
        "INSERT INTO notifications (user_id, niche_id, question_id, reason, status, digest, \
         due_at, attempts, retry_from, created_at, updated_at) \
         SELECT m.user_id, q.niche_id, q.id, 'waiting', 'planned', ?, ?, 0, ?, ?, ? \
         FROM agent_questions q \
         JOIN niche_members m ON m.niche_id = q.niche_id AND m.status = 'active' \
              AND m.role IN ('operator', 'specialist') \
         JOIN users u ON u.id = m.user_id \
         JOIN notification_settings s ON s.user_id = m.user_id AND s.verified_email = u.email \
         LEFT JOIN notification_preferences p ON p.user_id = m.user_id AND p.niche_id = q.niche_id \
         WHERE q.id IN ({marks}) AND (p.enabled IS NULL OR p.enabled = ?) \
         ON CONFLICT DO NOTHING"
    );
    let mut values: Vec<sea_orm::Value> =
        vec![false.into(), now.into(), now.into(), now.into(), now.into()];
    values.extend(question_ids.iter().map(|id| sea_orm::Value::from(*id)));
    values.push(true.into());
    txn.execute_raw(statement(txn.get_database_backend(), &sql, values))
        .await?;
    Ok(())
}

/// Step 1 of an escalation, inside its transaction: everyone of the niche who may be mailed and
/// has not been told of `question_id` yet is told now; what was waiting for a digest or the end
/// of quiet hours is not sent as well.
pub async fn plan_escalation(
    txn: &WriteTxn,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let sql = "INSERT INTO notifications (user_id, niche_id, question_id, reason, status, digest, \
         due_at, attempts, retry_from, created_at, updated_at) \
         SELECT m.user_id, q.niche_id, q.id, 'escalated', 'planned', ?, ?, 0, ?, ?, ? \
         FROM agent_questions q \
         JOIN niche_members m ON m.niche_id = q.niche_id AND m.status = 'active' \
              AND m.role IN ('operator', 'specialist') \
         JOIN users u ON u.id = m.user_id \
         JOIN notification_settings s ON s.user_id = m.user_id AND s.verified_email = u.email \
         LEFT JOIN notification_preferences p ON p.user_id = m.user_id AND p.niche_id = q.niche_id \
         WHERE q.id = ? AND (p.enabled IS NULL OR p.enabled = ?) \
         AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.user_id = m.user_id \
              AND n.question_id = q.id AND n.reason = 'waiting' AND n.status = 'sent') \
         ON CONFLICT DO NOTHING";
    let values: Vec<sea_orm::Value> = vec![
        false.into(),
        now.into(),
        now.into(),
        now.into(),
        now.into(),
        question_id.into(),
        true.into(),
    ];
    let backend = txn.get_database_backend();
    txn.execute_raw(statement(backend, sql, values)).await?;
    let superseded = "UPDATE notifications SET status = 'dropped', updated_at = ? \
         WHERE question_id = ? AND reason = 'waiting' AND status IN ('planned', 'pending') \
         AND user_id IN (SELECT user_id FROM notifications WHERE question_id = ? \
              AND reason = 'escalated')";
    txn.execute_raw(statement(
        backend,
        superseded,
        vec![now.into(), question_id.into(), question_id.into()],
    ))
    .await?;
    Ok(())
}

/// Step 2 of an escalation, inside its transaction: askloop's admins who may be mailed are told.
pub async fn plan_admin_escalation(
    txn: &WriteTxn,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let sql = "INSERT INTO notifications (user_id, niche_id, question_id, reason, status, digest, \
         due_at, attempts, retry_from, created_at, updated_at) \
         SELECT u.id, q.niche_id, q.id, 'escalated_admin', 'planned', ?, ?, 0, ?, ?, ? \
         FROM agent_questions q \
         JOIN users u ON u.role = 'admin' \
         JOIN notification_settings s ON s.user_id = u.id AND s.verified_email = u.email \
         LEFT JOIN notification_preferences p ON p.user_id = u.id AND p.niche_id = q.niche_id \
         WHERE q.id = ? AND (p.enabled IS NULL OR p.enabled = ?) \
         ON CONFLICT DO NOTHING";
    let values: Vec<sea_orm::Value> = vec![
        false.into(),
        now.into(),
        now.into(),
        now.into(),
        now.into(),
        question_id.into(),
        true.into(),
    ];
    txn.execute_raw(statement(txn.get_database_backend(), sql, values))
        .await?;
    Ok(())
}
