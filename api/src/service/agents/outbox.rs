//! The outbox (docs/contract.md#events-for-the-agent): events for the agent are delivery rows
//! written in the same transaction as the change that causes them; the worker ([`crate::worker`])
//! claims due rows, sends them and records every attempt here.
//!
//! Claims are leases: a claimed row carries a random token and an expiry. Two workers never hold
//! the same row at once (on PostgreSQL the claim skips rows another worker has locked; on SQLite
//! the claim runs in an IMMEDIATE transaction), and a worker that dies mid-send simply lets its
//! lease run out, after which the row is claimed and sent again with the same envelope id.
//!
//! Each claim is for one [`Class`] of receivers and takes due rows fairly across their
//! endpoints ([`Lane`]s), each endpoint up to its share, so the worker can claim as its slots
//! free up and no endpoint's backlog stands in front of another's.

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Utc};
use entity::agent_questions;
use entity::agents;
use entity::deliveries::{self, DeliveryStatus};
use entity::delivery_attempts;
use sea_orm::sea_query::{Expr, ExprTrait, LockBehavior, LockType, Query};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DbBackend,
    EntityTrait, NotSet, QueryFilter, QueryOrder, QuerySelect, Statement,
};
use serde_json::{Value, json};

use crate::domain::delivery::{AfterFailure, RetryPolicy, after_failure, is_delivered};
use crate::error::{Conflict, ServiceError};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

pub use crate::domain::delivery::EventType;

/// An event to send, about a question in a niche.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// Which event.
    pub event: EventType,
    /// The niche.
    pub niche_id: i64,
    /// The question.
    pub question_id: Option<i64>,
    /// The person who caused it, if one did.
    pub user_id: Option<i64>,
    /// The event's own fields.
    pub payload: Value,
}

impl NewEvent {
    /// `event` about `question`, caused by `user_id` (none: the agent or askloop itself). Its
    /// payload names the question as every question event does (`questionId`, `externalId`),
    /// then carries `fields`.
    pub fn about_question(
        event: EventType,
        question: &agent_questions::Model,
        user_id: Option<i64>,
        fields: Value,
    ) -> Self {
        let mut payload = json!({
            "questionId": question.id,
            "externalId": question.external_id,
        });
        if let (Some(payload), Value::Object(fields)) = (payload.as_object_mut(), fields) {
            payload.extend(fields);
        }
        Self {
            event,
            niche_id: question.niche_id,
            question_id: Some(question.id),
            user_id,
            payload,
        }
    }
}

/// The envelope of docs/contract.md#events-for-the-agent.
pub fn envelope(id: &str, event: &NewEvent, now: DateTime<Utc>) -> Value {
    json!({
        "id": id,
        "type": event.event.as_str(),
        "version": 1,
        "occurredAt": now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "producer": "askloop",
        "nicheId": event.niche_id,
        "userId": event.user_id,
        "payload": event.payload,
    })
}

/// Write `event` to the outbox on `conn` (the caller's transaction), due at once, addressed to
/// the agent that asked the question (docs/contract.md#agents). An event the agent's endpoint
/// does not want is not written at all (none).
pub async fn enqueue(
    conn: &WriteTxn,
    event: NewEvent,
    now: DateTime<Utc>,
) -> Result<Option<deliveries::Model>, ServiceError> {
    let agent_id = match event.question_id {
        Some(question_id) => agent_questions::Entity::find_by_id(question_id)
            .select_only()
            .column(agent_questions::Column::RegisteredAgentId)
            .into_tuple::<Option<i64>>()
            .one(conn)
            .await?
            .flatten(),
        None => None,
    };
    enqueue_to(conn, event, agent_id, now).await
}

/// [`enqueue`] for a caller that already holds the question, and so its registered agent
/// (`agent_id`, which a question keeps for life): one read fewer.
pub async fn enqueue_to(
    conn: &WriteTxn,
    event: NewEvent,
    agent_id: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Option<deliveries::Model>, ServiceError> {
    // The agent's A2A push configs on the question's task hear of it whatever its endpoint
    // wants (docs/contract.md#a2a).
    if let Some(question_id) = event.question_id
        && crate::service::agents::a2a_tasks::pushes_for(event.event)
    {
        crate::service::agents::a2a_tasks::enqueue_pushes(
            conn,
            question_id,
            event.event.as_str(),
            &event.payload,
            now,
        )
        .await?;
    }
    if let Some(agent_id) = agent_id {
        let wanted = agents::Entity::find_by_id(agent_id)
            .one(conn)
            .await?
            .map(|agent| crate::service::agents::registry::wanted_events(&agent))
            .unwrap_or_default();
        if !wanted.is_empty() && !wanted.iter().any(|name| name == event.event.as_str()) {
            return Ok(None);
        }
    }
    let envelope_id = format!("evt_{}", uuid::Uuid::new_v4().simple());
    let body = envelope(&envelope_id, &event, now).to_string();
    Ok(Some(
        deliveries::ActiveModel {
            id: NotSet,
            envelope_id: Set(envelope_id),
            event_type: Set(event.event.as_str().to_owned()),
            niche_id: Set(event.niche_id),
            question_id: Set(event.question_id),
            agent_id: Set(agent_id),
            webhook_id: Set(None),
            body: Set(body),
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
            single_attempt: Set(false),
            push_config_id: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(conn)
        .await?,
    ))
}

/// A claimed delivery: the row and the token that proves the claim.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The row as claimed.
    pub delivery: deliveries::Model,
    /// The claim's token.
    pub token: String,
}

/// Which receivers a delivery goes to. Each class has its own slots in the worker, so agents'
/// events never wait behind operator webhooks (docs/security.md#outbound).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Agents: registered ones and the default agent.
    Agents,
    /// Operator webhooks.
    Hooks,
}

/// One receiver's lane: the endpoint a delivery goes to, within its class — a registered agent
/// (the default agent is 0), or an operator webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lane {
    /// The class.
    pub class: Class,
    /// The agent's or the webhook's id (0: the default agent).
    pub endpoint: i64,
}

impl Lane {
    /// The lane `delivery` travels in.
    pub fn of(delivery: &deliveries::Model) -> Self {
        match delivery.webhook_id {
            Some(hook) => Lane {
                class: Class::Hooks,
                endpoint: hook,
            },
            None => Lane {
                class: Class::Agents,
                endpoint: delivery.agent_id.unwrap_or(0),
            },
        }
    }
}

/// What one claim asks for.
#[derive(Debug, Clone)]
pub struct ClaimRequest {
    /// Whose deliveries.
    pub class: Class,
    /// At most this many (the class's free slots).
    pub limit: usize,
    /// At most this many claimed at once per endpoint, counting every worker's live claims.
    pub per_endpoint: usize,
    /// Endpoints not to claim for now (their breaker is open, or their one probe is out).
    pub skip: Vec<i64>,
    /// Endpoints whose breaker lets one probe through: at most one claimed at once.
    pub probing: Vec<i64>,
    /// How long the claim holds.
    pub lease: std::time::Duration,
    /// Whether the default agent has a URL (`CHOVY_WEBHOOK_URL`), so its deliveries are sent.
    pub default_has_url: bool,
}

/// The due deliveries `request` may claim now, fairly: the first due of every endpoint before
/// the second of any, each endpoint below its share counting the claims every worker holds.
/// Only deliveries that can be sent now: a registered agent's while it is active with a URL
/// (a disabled one's wait without an attempt), the default agent's when it has one, and live
/// webhooks'. A plain read; the claim itself is [`claim_due`].
fn candidates(request: &ClaimRequest, backend: DbBackend, now: DateTime<Utc>) -> Statement {
    let (lane, class_only, sendable) = match request.class {
        Class::Agents => (
            "COALESCE(agent_id, 0)",
            "webhook_id IS NULL",
            format!(
                "webhook_id IS NULL AND (agent_id IN (SELECT id FROM agents WHERE status = \
                 'active' AND webhook_url IS NOT NULL) OR (push_config_id IS NOT NULL AND \
                 agent_id IN (SELECT id FROM agents WHERE status = 'active')){})",
                if request.default_has_url {
                    " OR agent_id IS NULL"
                } else {
                    ""
                }
            ),
        ),
        Class::Hooks => (
            "webhook_id",
            "webhook_id IS NOT NULL",
            "webhook_id IN (SELECT id FROM operator_webhooks WHERE revoked_at IS NULL)".to_owned(),
        ),
    };
    let count = |n: usize| sea_orm::Value::from(i64::try_from(n).unwrap_or(i64::MAX));
    let marks = |n: usize| vec!["?"; n].join(", ");
    let mut values: Vec<sea_orm::Value> = vec![now.into(), now.into(), now.into()];
    let skip = if request.skip.is_empty() {
        String::new()
    } else {
        values.extend(request.skip.iter().map(|&id| sea_orm::Value::from(id)));
        format!(" AND {lane} NOT IN ({})", marks(request.skip.len()))
    };
    let share = if request.probing.is_empty() {
        values.push(count(request.per_endpoint));
        "?".to_owned()
    } else {
        values.extend(request.probing.iter().map(|&id| sea_orm::Value::from(id)));
        values.push(count(request.per_endpoint));
        format!(
            "CASE WHEN due.lane IN ({}) THEN 1 ELSE ? END",
            marks(request.probing.len())
        )
    };
    values.push(count(request.limit));
    let sql = format!(
        "WITH busy AS ( \
           SELECT {lane} AS lane, COUNT(*) AS n FROM deliveries \
           WHERE status = 'pending' AND claimed_until > ? AND {class_only} \
           GROUP BY {lane} \
         ), due AS ( \
           SELECT id, next_attempt_at, {lane} AS lane, \
                  ROW_NUMBER() OVER (PARTITION BY {lane} ORDER BY next_attempt_at, id) AS rn \
           FROM deliveries \
           WHERE status = 'pending' AND next_attempt_at <= ? \
             AND (claimed_until IS NULL OR claimed_until <= ?) \
             AND {sendable}{skip} \
         ) \
         SELECT due.id FROM due LEFT JOIN busy ON busy.lane = due.lane \
         WHERE due.rn + COALESCE(busy.n, 0) <= {share} \
         ORDER BY due.rn, due.next_attempt_at, due.id \
         LIMIT ?"
    );
    crate::db::statement(backend, &sql, values)
}

/// Claim for `request.lease` what [`candidates`] finds due. Two workers never hold the same row
/// at once: the claim takes only rows still unclaimed when it commits (on PostgreSQL skipping
/// rows another worker is claiming; on SQLite in an IMMEDIATE transaction).
pub async fn claim_due(
    db: &Db,
    request: &ClaimRequest,
    now: DateTime<Utc>,
) -> Result<Vec<Claimed>, ServiceError> {
    if request.limit == 0 {
        return Ok(Vec::new());
    }
    let backend = db.get_database_backend();
    // A plain read first: when nothing is due (most polls, and every poll of an askloop that
    // has no endpoint to send to) no write transaction is opened, so idle polling never takes
    // SQLite's write lock from the writers that matter. The claim below still decides.
    let ids: Vec<i64> = db
        .query_all_raw(candidates(request, backend, now))
        .await?
        .iter()
        .map(|row| row.try_get_by_index::<i64>(0))
        .collect::<Result<_, _>>()?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let token = uuid::Uuid::new_v4().simple().to_string();
    let until =
        now + chrono::Duration::from_std(request.lease).unwrap_or(chrono::Duration::seconds(60));
    let mut still_free = Query::select();
    still_free
        .column(deliveries::Column::Id)
        .from(deliveries::Entity)
        .and_where(deliveries::Column::Id.is_in(ids))
        .and_where(deliveries::Column::Status.eq(DeliveryStatus::Pending))
        .cond_where(
            Condition::any()
                .add(deliveries::Column::ClaimedUntil.is_null())
                .add(deliveries::Column::ClaimedUntil.lte(now)),
        );
    if backend == DbBackend::Postgres {
        still_free.lock_with_behavior(LockType::Update, LockBehavior::SkipLocked);
    }
    let txn = db.begin_write().await?;
    let claimed = deliveries::Entity::update_many()
        .col_expr(
            deliveries::Column::ClaimToken,
            Expr::value(Some(token.clone())),
        )
        .col_expr(deliveries::Column::ClaimedUntil, Expr::value(Some(until)))
        .col_expr(deliveries::Column::UpdatedAt, Expr::value(now))
        .filter(deliveries::Column::Id.in_subquery(still_free))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    if claimed.rows_affected == 0 {
        return Ok(Vec::new());
    }
    let rows = deliveries::Entity::find()
        .filter(deliveries::Column::ClaimToken.eq(token.clone()))
        .filter(deliveries::Column::Status.eq(DeliveryStatus::Pending))
        .order_by_asc(deliveries::Column::Id)
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .map(|delivery| Claimed {
            delivery,
            token: token.clone(),
        })
        .collect())
}

/// Drop a claimed delivery unsent, saying why (its webhook's owner may no longer hear of the
/// niche): it is never sent, and the reason shows on it.
pub async fn drop_claimed(
    db: &Db,
    claimed: &Claimed,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    let txn = db.begin_write().await?;
    deliveries::Entity::update_many()
        .col_expr(
            deliveries::Column::Status,
            Expr::value(DeliveryStatus::Dropped),
        )
        .col_expr(
            deliveries::Column::DroppedReason,
            Expr::value(Some(reason.to_owned())),
        )
        .col_expr(deliveries::Column::ClaimToken, Expr::value(None::<String>))
        .col_expr(
            deliveries::Column::ClaimedUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(deliveries::Column::UpdatedAt, Expr::value(now))
        .filter(deliveries::Column::Id.eq(claimed.delivery.id))
        .filter(deliveries::Column::ClaimToken.eq(claimed.token.clone()))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// Let go of a claimed delivery without an attempt (its agent was disabled or lost its URL
/// between the claim and the send): it waits, unchanged, for the next claim that may send it.
pub async fn release(db: &Db, claimed: &Claimed, now: DateTime<Utc>) -> Result<(), ServiceError> {
    let txn = db.begin_write().await?;
    deliveries::Entity::update_many()
        .col_expr(deliveries::Column::ClaimToken, Expr::value(None::<String>))
        .col_expr(
            deliveries::Column::ClaimedUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(deliveries::Column::UpdatedAt, Expr::value(now))
        .filter(deliveries::Column::Id.eq(claimed.delivery.id))
        .filter(deliveries::Column::ClaimToken.eq(claimed.token.clone()))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(())
}

/// What one attempt came to.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// When it was sent.
    pub at: DateTime<Utc>,
    /// The HTTP status, if one came back.
    pub status_code: Option<u16>,
    /// How long it took.
    pub duration: std::time::Duration,
    /// What went wrong (a transport error or the non-2xx status).
    pub error: Option<String>,
    /// The receiver's `Retry-After`, if any.
    pub retry_after: Option<std::time::Duration>,
}

/// Record `attempt` for a claimed delivery and decide what follows: delivered, a retry at a
/// later time, or exhausted. The attempt is always logged; the delivery changes only while the
/// claim is still ours (a worker whose lease ran out does not overwrite the new holder).
pub async fn record(
    db: &Db,
    claimed: &Claimed,
    attempt: &Attempt,
    policy: &RetryPolicy,
    jitter: f64,
    now: DateTime<Utc>,
) -> Result<DeliveryStatus, ServiceError> {
    let delivery = &claimed.delivery;
    let failures = u32::try_from(delivery.attempts + 1).unwrap_or(u32::MAX);
    let delivered = attempt.status_code.is_some_and(is_delivered);
    let (status, next, outcome) = if delivered {
        (
            DeliveryStatus::Delivered,
            delivery.next_attempt_at,
            "delivered",
        )
    } else if delivery.single_attempt {
        // A test event is sent once: its one attempt is all the owner asked for.
        (DeliveryStatus::Exhausted, now, "exhausted")
    } else {
        match after_failure(
            policy,
            failures,
            attempt.retry_after,
            delivery.retry_from,
            now,
            jitter,
        ) {
            AfterFailure::RetryAt(at) => (DeliveryStatus::Pending, at, "retry"),
            AfterFailure::Exhausted => (DeliveryStatus::Exhausted, now, "exhausted"),
        }
    };
    let txn = db.begin_write().await?;
    delivery_attempts::ActiveModel {
        id: NotSet,
        delivery_id: Set(delivery.id),
        attempted_at: Set(attempt.at),
        status_code: Set(attempt.status_code.map(i32::from)),
        duration_ms: Set(i64::try_from(attempt.duration.as_millis()).unwrap_or(i64::MAX)),
        error: Set(attempt.error.clone()),
        outcome: Set(outcome.to_owned()),
    }
    .insert(&txn)
    .await?;
    let updated = deliveries::Entity::update_many()
        .col_expr(deliveries::Column::Status, Expr::value(status))
        .col_expr(
            deliveries::Column::Attempts,
            Expr::col(deliveries::Column::Attempts).add(1),
        )
        .col_expr(deliveries::Column::NextAttemptAt, Expr::value(next))
        .col_expr(deliveries::Column::ClaimToken, Expr::value(None::<String>))
        .col_expr(
            deliveries::Column::ClaimedUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(
            deliveries::Column::LastStatusCode,
            Expr::value(attempt.status_code.map(i32::from)),
        )
        .col_expr(
            deliveries::Column::LastError,
            Expr::value(attempt.error.clone()),
        )
        .col_expr(
            deliveries::Column::DeliveredAt,
            Expr::value(delivered.then_some(now)),
        )
        .col_expr(deliveries::Column::UpdatedAt, Expr::value(now))
        .filter(deliveries::Column::Id.eq(delivery.id))
        .filter(deliveries::Column::ClaimToken.eq(claimed.token.clone()))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    if updated.rows_affected == 0 {
        tracing::warn!(
            envelope = %delivery.envelope_id,
            "a delivery's claim ran out before its attempt was recorded; the new holder decides"
        );
    }
    Ok(status)
}

/// Deliveries for admins: failures first (exhausted, then pending with errors), newest first.
pub async fn list(
    db: &Db,
    viewer: Option<&Viewer>,
    status: Option<DeliveryStatus>,
    event: Option<EventType>,
    limit: u64,
) -> Result<Vec<deliveries::Model>, ServiceError> {
    access::admin(viewer)?;
    let mut query = deliveries::Entity::find();
    if let Some(status) = status {
        query = query.filter(deliveries::Column::Status.eq(status));
    }
    if let Some(event) = event {
        query = query.filter(deliveries::Column::EventType.eq(event.as_str()));
    }
    let mut rows = query
        .order_by_desc(deliveries::Column::Id)
        .limit(limit)
        .all(db)
        .await?;
    rows.sort_by_key(|d| match (d.status, d.last_error.is_some()) {
        (DeliveryStatus::Exhausted, _) => 0,
        (DeliveryStatus::Pending, true) => 1,
        (DeliveryStatus::Pending, false) => 2,
        (DeliveryStatus::Dropped, _) => 3,
        (DeliveryStatus::Delivered, _) => 4,
    });
    Ok(rows)
}

/// A delivery's attempts, oldest first.
pub async fn attempts_of(
    db: &Db,
    delivery_id: i64,
) -> Result<Vec<delivery_attempts::Model>, ServiceError> {
    Ok(delivery_attempts::Entity::find()
        .filter(delivery_attempts::Column::DeliveryId.eq(delivery_id))
        .order_by_asc(delivery_attempts::Column::Id)
        .all(db)
        .await?)
}

/// Send a delivery again (an admin's decision, audited): due now, with a fresh retry window.
/// The envelope — and its id — stay the same, so an agent that already has it ignores it.
pub async fn redeliver(
    db: &Db,
    viewer: Option<&Viewer>,
    delivery_id: i64,
    now: DateTime<Utc>,
) -> Result<deliveries::Model, ServiceError> {
    let admin_id = access::admin(viewer)?.user_id;
    let txn = db.begin_write().await?;
    let found = deliveries::Entity::find_by_id(delivery_id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such delivery".into()))?;
    // A worker holding it is sending it right now: taking its lease away would let a second
    // worker send the same envelope at the same time.
    if found.status == DeliveryStatus::Pending
        && found.claimed_until.is_some_and(|until| until > now)
    {
        return Err(Conflict::DeliveryInFlight.into());
    }
    let mut row: deliveries::ActiveModel = found.clone().into();
    row.status = Set(DeliveryStatus::Pending);
    row.next_attempt_at = Set(now);
    row.retry_from = Set(now);
    row.claim_token = Set(None);
    row.claimed_until = Set(None);
    row.updated_at = Set(now);
    let updated = row.update(&txn).await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(admin_id),
            action: "delivery.redelivered",
            subject_type: "delivery",
            subject_id: delivery_id,
            niche_id: Some(found.niche_id),
            detail: json!({ "envelopeId": found.envelope_id, "was": found.status }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(updated)
}
