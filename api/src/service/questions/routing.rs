//! A routed first wave (docs/contract.md#routed-first-wave): in a niche that routes its
//! notifications, a new question's immediate notifications (mail, operator webhooks) go first to
//! the k active operators best placed to answer it, and to everyone else at half the niche's
//! escalation wait for its urgency. The queue is unchanged: every member sees every question.
//!
//! Best placed: their verified answers like this question (the knowledge search's likes query
//! over the niche's current entries, each entry's likeness summed per author), weighed by their
//! record (the Wilson lower bound of their verified rate); then their record alone. Whoever is in
//! quiet hours now is left for the second wave. Whom, in what order and why is kept in
//! `question_routes` for the niche's admins.

use chrono::{DateTime, Utc};
use entity::agent_questions;
use entity::deliveries::{self, DeliveryStatus};
use entity::niche_members::{self, MemberRole, MemberStatus};
use entity::{niches, notification_settings, notifications, operator_webhooks, question_routes};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};
use std::collections::HashMap;

use crate::db::WriteTxn;
use crate::error::ServiceError;
use crate::service::{knowledge, people::weighing, questions::escalation, reach};

/// How many of the niche's entries like the question are weighed.
const LIKES_WEIGHED: usize = 20;

/// One operator placed for a question.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    /// The operator.
    pub user_id: i64,
    /// Their verified answers like the question: the entries' likeness (0–1) summed.
    pub likeness: f64,
    /// How many of their entries were like it.
    pub entries: usize,
    /// Their lower bound in the niche.
    pub lower_bound: f64,
    /// `likeness × lower_bound`: what they are ranked by first.
    pub score: f64,
}

/// The order of `placed`: by score, then lower bound, then who joined askloop first.
pub fn rank(placed: &mut [Placed]) {
    placed.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.lower_bound.total_cmp(&a.lower_bound))
            .then(a.user_id.cmp(&b.user_id))
    });
}

/// Why someone was picked, in words an admin reads.
pub fn reason(placed: &Placed, rank: usize) -> String {
    let record = format!("lower bound {:.2}", placed.lower_bound);
    if placed.entries == 0 {
        format!("#{rank}: no verified answer like this one yet; picked by record ({record})")
    } else {
        format!(
            "#{rank}: {} verified answer{} like this one (likeness {:.2}), {record}",
            placed.entries,
            if placed.entries == 1 { "" } else { "s" },
            placed.likeness
        )
    }
}

/// Route `question`'s first wave, inside the transaction that stored it and planned its
/// notifications; nothing for a niche that broadcasts. The others' mail and webhook deliveries
/// wait until half the escalation wait (at once when the urgency never escalates).
pub async fn first_wave(
    txn: &WriteTxn,
    niche: &niches::Model,
    question_id: i64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let Some(k) = niche.first_wave else {
        return Ok(());
    };
    let Some(question) = agent_questions::Entity::find_by_id(question_id)
        .one(txn)
        .await?
    else {
        return Ok(());
    };
    let members: Vec<i64> = niche_members::Entity::find()
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::Status.eq(MemberStatus::Active))
        .filter(niche_members::Column::Role.is_in([MemberRole::Operator, MemberRole::Specialist]))
        .all(txn)
        .await?
        .into_iter()
        .map(|m| m.user_id)
        .collect();
    if members.is_empty() {
        return Ok(());
    }
    let records = weighing::records(txn, niche.id, Some(&members)).await?;
    let likes = knowledge::similar(
        txn,
        niche.id,
        (&question.title, &question.question),
        Some(question.id),
        LIKES_WEIGHED,
    )
    .await?;
    let mut by_author: HashMap<i64, (f64, usize)> = HashMap::new();
    for like in &likes {
        let entry = by_author.entry(like.found.entry.answered_by).or_default();
        entry.0 += f64::from(like.likeness_bps) / 10_000.0;
        entry.1 += 1;
    }
    let quiet: Vec<i64> = notification_settings::Entity::find()
        .filter(notification_settings::Column::UserId.is_in(members.clone()))
        .all(txn)
        .await?
        .iter()
        .filter(|s| reach::recipient_of(Some(s)).quiet_until(now).is_some())
        .map(|s| s.user_id)
        .collect();
    let mut placed: Vec<Placed> = members
        .iter()
        .filter(|m| !quiet.contains(m))
        .map(|&user_id| {
            let (likeness, entries) = by_author.get(&user_id).copied().unwrap_or_default();
            let lower_bound = records.get(&user_id).map_or(0.0, |r| r.lower_bound);
            Placed {
                user_id,
                likeness,
                entries,
                lower_bound,
                score: likeness * lower_bound,
            }
        })
        .collect();
    rank(&mut placed);
    placed.truncate(usize::try_from(k).unwrap_or(0));
    let wave: Vec<i64> = placed.iter().map(|p| p.user_id).collect();
    if !placed.is_empty() {
        question_routes::Entity::insert_many(placed.iter().enumerate().map(|(i, p)| {
            question_routes::ActiveModel {
                id: NotSet,
                question_id: Set(question.id),
                user_id: Set(p.user_id),
                rank: Set(i32::try_from(i + 1).unwrap_or(i32::MAX)),
                score: Set(p.score),
                reason: Set(reason(p, i + 1)),
                created_at: Set(now),
            }
        }))
        .exec_without_returning(txn)
        .await?;
    }
    let Some(wait) = escalation::wait_for(niche, question.urgency) else {
        return Ok(());
    };
    let later = now + wait / 2;
    notifications::Entity::update_many()
        .col_expr(notifications::Column::DueAt, Expr::value(later))
        .filter(notifications::Column::QuestionId.eq(question.id))
        .filter(notifications::Column::Reason.eq("waiting"))
        .filter(notifications::Column::Status.eq("planned"))
        .filter(notifications::Column::UserId.is_not_in(wave.clone()))
        .exec(txn)
        .await?;
    let others_hooks: Vec<i64> = operator_webhooks::Entity::find()
        .filter(operator_webhooks::Column::NicheId.eq(niche.id))
        .filter(operator_webhooks::Column::UserId.is_not_in(wave))
        .all(txn)
        .await?
        .into_iter()
        .map(|h| h.id)
        .collect();
    if !others_hooks.is_empty() {
        deliveries::Entity::update_many()
            .col_expr(deliveries::Column::NextAttemptAt, Expr::value(later))
            .col_expr(deliveries::Column::RetryFrom, Expr::value(later))
            .filter(deliveries::Column::QuestionId.eq(question.id))
            .filter(deliveries::Column::Status.eq(DeliveryStatus::Pending))
            .filter(deliveries::Column::WebhookId.is_in(others_hooks))
            .exec(txn)
            .await?;
    }
    Ok(())
}

/// Whom `question_id`'s first wave went to, first first.
pub async fn routes_of<C: sea_orm::ConnectionTrait>(
    conn: &C,
    question_id: i64,
) -> Result<Vec<question_routes::Model>, ServiceError> {
    use sea_orm::QueryOrder;
    Ok(question_routes::Entity::find()
        .filter(question_routes::Column::QuestionId.eq(question_id))
        .order_by_asc(question_routes::Column::Rank)
        .all(conn)
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(user_id: i64, likeness: f64, lower_bound: f64) -> Placed {
        Placed {
            user_id,
            likeness,
            entries: usize::from(likeness > 0.0),
            lower_bound,
            score: likeness * lower_bound,
        }
    }

    #[test]
    fn likeness_weighed_by_record_comes_first_then_the_record() {
        let mut all = vec![
            placed(1, 0.0, 0.95),
            placed(2, 1.5, 0.60),
            placed(3, 1.0, 0.92),
            placed(4, 0.0, 0.10),
        ];
        rank(&mut all);
        let order: Vec<i64> = all.iter().map(|p| p.user_id).collect();
        // 3: 0.92, 2: 0.90, then by record alone: 1 (0.95), 4 (0.10).
        assert_eq!(order, [3, 2, 1, 4]);
        assert!(reason(&all[0], 1).contains("1 verified answer like this one"));
        assert!(reason(&all[2], 3).contains("picked by record"));
    }
}
