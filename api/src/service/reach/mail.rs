//! The mail outbox (docs/contract.md#email): placing planned notifications by each person's
//! preferences, claiming due ones with a lease (like `deliveries`), composing what they say, and
//! recording how sending went. The SMTP side is the mail worker's (`worker::mail`).

use std::collections::{HashMap, HashSet};

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::agent_questions::{self, QuestionStatus};
use entity::{niches, notification_preferences, notification_settings, notifications, users};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use crate::domain::delivery::{AfterFailure, RetryPolicy, after_failure};
use crate::domain::text::cap;
use crate::error::ServiceError;
use crate::service::reach::{self, Placement};

/// How many planned rows one pass places.
const PLACE_BATCH: u64 = 500;

/// Place up to [`PLACE_BATCH`] planned notifications: each becomes pending (on its own or in a
/// digest, at the time its person's preferences say) or dropped. How many were placed.
pub async fn place_planned(db: &Db, now: DateTime<Utc>) -> Result<usize, ServiceError> {
    // A routed question's second wave is planned for later (docs/contract.md#routed-first-wave).
    let planned = notifications::Entity::find()
        .filter(notifications::Column::Status.eq("planned"))
        .filter(notifications::Column::DueAt.lte(now))
        .order_by_asc(notifications::Column::Id)
        .limit(PLACE_BATCH)
        .all(db)
        .await?;
    if planned.is_empty() {
        return Ok(0);
    }
    let people: Vec<i64> = planned.iter().map(|n| n.user_id).collect();
    let questions: Vec<i64> = planned.iter().filter_map(|n| n.question_id).collect();
    let settings: HashMap<i64, notification_settings::Model> =
        notification_settings::Entity::find()
            .filter(notification_settings::Column::UserId.is_in(people.clone()))
            .all(db)
            .await?
            .into_iter()
            .map(|s| (s.user_id, s))
            .collect();
    let preferences: HashMap<(i64, i64), notification_preferences::Model> =
        notification_preferences::Entity::find()
            .filter(notification_preferences::Column::UserId.is_in(people))
            .all(db)
            .await?
            .into_iter()
            .map(|p| ((p.user_id, p.niche_id), p))
            .collect();
    let urgencies: HashMap<i64, agent_questions::Model> = agent_questions::Entity::find()
        .filter(agent_questions::Column::Id.is_in(questions))
        .all(db)
        .await?
        .into_iter()
        .map(|q| (q.id, q))
        .collect();
    let txn = db.begin_write().await?;
    for row in &planned {
        let question = row.question_id.and_then(|id| urgencies.get(&id));
        let placement = match (question, row.niche_id) {
            (Some(question), Some(niche_id)) => reach::place(
                &reach::recipient_of(settings.get(&row.user_id)),
                &reach::wanted_of(preferences.get(&(row.user_id, niche_id))),
                question.urgency,
                &row.reason,
                now,
            ),
            _ => Placement::Dropped,
        };
        let (status, digest, due) = match placement {
            Placement::Alone(at) => ("pending", false, at),
            Placement::Digest(at) => ("pending", true, at),
            Placement::Dropped => ("dropped", false, now),
        };
        notifications::Entity::update_many()
            .col_expr(notifications::Column::Status, Expr::value(status))
            .col_expr(notifications::Column::Digest, Expr::value(digest))
            .col_expr(notifications::Column::DueAt, Expr::value(due))
            .col_expr(notifications::Column::UpdatedAt, Expr::value(now))
            .filter(notifications::Column::Id.eq(row.id))
            .filter(notifications::Column::Status.eq("planned"))
            .exec(&txn)
            .await?;
    }
    txn.commit().await?;
    Ok(planned.len())
}

/// Claim the due notifications of up to `people` persons for `lease`: every due row of each, so
/// one person's digest is gathered by one sender. The rows claimed, with the claim's token.
pub async fn claim_due(
    db: &Db,
    people: u64,
    lease: std::time::Duration,
    now: DateTime<Utc>,
) -> Result<(String, Vec<notifications::Model>), ServiceError> {
    let due = || {
        Condition::all()
            .add(notifications::Column::Status.eq("pending"))
            .add(notifications::Column::DueAt.lte(now))
            .add(
                Condition::any()
                    .add(notifications::Column::ClaimedUntil.is_null())
                    .add(notifications::Column::ClaimedUntil.lte(now)),
            )
    };
    let whose: Vec<i64> = notifications::Entity::find()
        .select_only()
        .column(notifications::Column::UserId)
        .filter(due())
        .order_by_asc(notifications::Column::DueAt)
        .limit(people * 20)
        .into_tuple::<i64>()
        .all(db)
        .await?;
    let mut whose_unique = Vec::new();
    for id in whose {
        if !whose_unique.contains(&id) {
            whose_unique.push(id);
        }
        if whose_unique.len() as u64 >= people {
            break;
        }
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    if whose_unique.is_empty() {
        return Ok((token, Vec::new()));
    }
    let until = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(60));
    let txn = db.begin_write().await?;
    notifications::Entity::update_many()
        .col_expr(
            notifications::Column::ClaimToken,
            Expr::value(Some(token.clone())),
        )
        .col_expr(
            notifications::Column::ClaimedUntil,
            Expr::value(Some(until)),
        )
        .filter(due())
        .filter(notifications::Column::UserId.is_in(whose_unique))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    let rows = notifications::Entity::find()
        .filter(notifications::Column::ClaimToken.eq(token.clone()))
        .filter(notifications::Column::Status.eq("pending"))
        .order_by_asc(notifications::Column::Id)
        .all(db)
        .await?;
    Ok((token, rows))
}

/// Mark claimed rows `status` (`sent` or `dropped`), while the claim is still ours.
pub async fn finish(
    db: &Db,
    token: &str,
    ids: &[i64],
    status: &str,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if ids.is_empty() {
        return Ok(());
    }
    let txn = db.begin_write().await?;
    notifications::Entity::update_many()
        .col_expr(notifications::Column::Status, Expr::value(status))
        .col_expr(
            notifications::Column::SentAt,
            Expr::value((status == "sent").then_some(now)),
        )
        .col_expr(
            notifications::Column::ClaimToken,
            Expr::value(None::<String>),
        )
        .col_expr(
            notifications::Column::ClaimedUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(notifications::Column::UpdatedAt, Expr::value(now))
        .filter(notifications::Column::Id.is_in(ids.to_vec()))
        .filter(notifications::Column::ClaimToken.eq(token))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// Record a failed send of claimed `rows`: each is tried again later, or is exhausted once its
/// retries run out.
pub async fn failed(
    db: &Db,
    token: &str,
    rows: &[&notifications::Model],
    error: &str,
    policy: &RetryPolicy,
    jitter: f64,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let txn = db.begin_write().await?;
    for row in rows {
        let failures = u32::try_from(row.attempts + 1).unwrap_or(u32::MAX);
        let (status, next) =
            match after_failure(policy, failures, None, row.retry_from, now, jitter) {
                AfterFailure::RetryAt(at) => ("pending", at),
                AfterFailure::Exhausted => ("exhausted", now),
            };
        notifications::Entity::update_many()
            .col_expr(notifications::Column::Status, Expr::value(status))
            .col_expr(notifications::Column::DueAt, Expr::value(next))
            .col_expr(
                notifications::Column::Attempts,
                Expr::col(notifications::Column::Attempts).add(1),
            )
            .col_expr(
                notifications::Column::LastError,
                Expr::value(Some(cap(error, 500))),
            )
            .col_expr(
                notifications::Column::ClaimToken,
                Expr::value(None::<String>),
            )
            .col_expr(
                notifications::Column::ClaimedUntil,
                Expr::value(None::<DateTime<Utc>>),
            )
            .col_expr(notifications::Column::UpdatedAt, Expr::value(now))
            .filter(notifications::Column::Id.eq(row.id))
            .filter(notifications::Column::ClaimToken.eq(token))
            .exec(&txn)
            .await?;
    }
    txn.commit().await?;
    Ok(())
}

/// What the rows of one person need to be written: the person, their settings, and the
/// questions and niches named.
pub struct Facts {
    /// The people, by id.
    pub people: HashMap<i64, users::Model>,
    /// Their settings, by person.
    pub settings: HashMap<i64, notification_settings::Model>,
    /// The questions, by id.
    pub questions: HashMap<i64, agent_questions::Model>,
    /// The niches, by id.
    pub niches: HashMap<i64, niches::Model>,
    /// (person, niche) pairs whose person may still hear of the niche: an admin, or an active
    /// member (docs/contract.md#email).
    pub may_hear: HashSet<(i64, i64)>,
}

impl Facts {
    /// Whether `row` still has something to say to an address it may go to: its person's
    /// address is verified (or it is the verification itself), they may still hear of its niche
    /// (a member suspended since it was written is not mailed), and its question still waits.
    pub fn still_worth_sending(&self, row: &notifications::Model) -> bool {
        let Some(person) = self.people.get(&row.user_id) else {
            return false;
        };
        if row.reason == "verify_email" {
            return true;
        }
        let verified = self
            .settings
            .get(&row.user_id)
            .is_some_and(|s| s.verified_email.as_deref() == Some(person.email.as_str()));
        let waiting = row
            .question_id
            .and_then(|id| self.questions.get(&id))
            .is_some_and(|q| q.status == QuestionStatus::Open);
        let hears = row
            .niche_id
            .is_some_and(|niche| self.may_hear.contains(&(row.user_id, niche)));
        verified && hears && waiting
    }
}

/// Read what `rows` name.
pub async fn facts(db: &Db, rows: &[notifications::Model]) -> Result<Facts, ServiceError> {
    let people: Vec<i64> = rows.iter().map(|r| r.user_id).collect();
    let questions: Vec<i64> = rows.iter().filter_map(|r| r.question_id).collect();
    let niches: Vec<i64> = rows.iter().filter_map(|r| r.niche_id).collect();
    let mut by_niche: HashMap<i64, Vec<i64>> = HashMap::new();
    for row in rows {
        if let Some(niche) = row.niche_id {
            by_niche.entry(niche).or_default().push(row.user_id);
        }
    }
    let mut may_hear = HashSet::new();
    for (niche, people) in by_niche {
        for person in crate::service::people::access::who_may_hear(db, &people, niche).await? {
            may_hear.insert((person, niche));
        }
    }
    Ok(Facts {
        may_hear,
        people: users::Entity::find()
            .filter(users::Column::Id.is_in(people.clone()))
            .all(db)
            .await?
            .into_iter()
            .map(|u| (u.id, u))
            .collect(),
        settings: notification_settings::Entity::find()
            .filter(notification_settings::Column::UserId.is_in(people))
            .all(db)
            .await?
            .into_iter()
            .map(|s| (s.user_id, s))
            .collect(),
        questions: agent_questions::Entity::find()
            .filter(agent_questions::Column::Id.is_in(questions))
            .all(db)
            .await?
            .into_iter()
            .map(|q| (q.id, q))
            .collect(),
        niches: niches::Entity::find()
            .filter(niches::Column::Id.is_in(niches))
            .all(db)
            .await?
            .into_iter()
            .map(|n| (n.id, n))
            .collect(),
    })
}

/// The notifications of one person, by id (for a test or an admin to read back).
pub async fn of_person(db: &Db, user_id: i64) -> Result<Vec<notifications::Model>, ServiceError> {
    Ok(notifications::Entity::find()
        .filter(notifications::Column::UserId.eq(user_id))
        .order_by_asc(notifications::Column::Id)
        .all(db)
        .await?)
}
