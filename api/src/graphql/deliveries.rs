//! Deliveries for admins: the outbox with every attempt, and redelivery.

use crate::db::Db;
use async_graphql::{ComplexObject, Context, Enum, ID, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::deliveries::{self, DeliveryStatus as Stored};
use entity::delivery_attempts;

use super::caller_of;
use super::enums::AttemptOutcome;
use super::writer;
use crate::config::Config;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::service::agents::outbox::{self, EventType};
use crate::service::agents::registry;
use crate::service::questions::queue::page_size;
use std::sync::Arc;

/// Where a delivery is.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
pub enum DeliveryStatus {
    /// Waiting for its next attempt.
    Pending,
    /// The agent took it.
    Delivered,
    /// Retries ran out.
    Exhausted,
    /// Not sent, for the reason it carries.
    Dropped,
}

impl From<Stored> for DeliveryStatus {
    fn from(status: Stored) -> Self {
        match status {
            Stored::Pending => DeliveryStatus::Pending,
            Stored::Delivered => DeliveryStatus::Delivered,
            Stored::Exhausted => DeliveryStatus::Exhausted,
            Stored::Dropped => DeliveryStatus::Dropped,
        }
    }
}

impl From<DeliveryStatus> for Stored {
    fn from(status: DeliveryStatus) -> Self {
        match status {
            DeliveryStatus::Pending => Stored::Pending,
            DeliveryStatus::Delivered => Stored::Delivered,
            DeliveryStatus::Exhausted => Stored::Exhausted,
            DeliveryStatus::Dropped => Stored::Dropped,
        }
    }
}

/// An event for the agent and how sending it went.
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct Delivery {
    /// Its id.
    pub id: ID,
    /// The envelope id the agent dedupes on.
    pub envelope_id: String,
    /// The event (`expert_answer.created`, …).
    pub event_type: String,
    /// The question it is about.
    pub question_id: Option<ID>,
    /// Where it is.
    pub status: DeliveryStatus,
    /// Attempts so far.
    pub attempt_count: i64,
    /// When it is next tried (while pending).
    pub next_attempt_at: DateTime<Utc>,
    /// The last attempt's HTTP status.
    pub last_status_code: Option<i32>,
    /// The last attempt's error.
    pub last_error: Option<String>,
    /// The envelope as sent (JSON text; agent-influenced, show as text).
    pub envelope: String,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// When the agent took it.
    pub delivered_at: Option<DateTime<Utc>>,
    /// Why it was not sent, when it is dropped.
    pub dropped_reason: Option<String>,
    #[graphql(skip)]
    pub row_id: i64,
    /// The agent it is for, when it goes to a registered agent.
    #[graphql(skip)]
    pub agent_id: Option<i64>,
    /// Whether it goes to an operator's webhook (not to an agent).
    #[graphql(skip)]
    pub to_webhook: bool,
}

impl From<deliveries::Model> for Delivery {
    fn from(d: deliveries::Model) -> Self {
        Self {
            id: ID(d.id.to_string()),
            envelope_id: d.envelope_id,
            event_type: d.event_type,
            question_id: d.question_id.map(|q| ID(q.to_string())),
            status: d.status.into(),
            attempt_count: d.attempts,
            next_attempt_at: d.next_attempt_at,
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            envelope: d.body,
            created_at: d.created_at,
            delivered_at: d.delivered_at,
            dropped_reason: d.dropped_reason,
            row_id: d.id,
            agent_id: d.agent_id,
            to_webhook: d.webhook_id.is_some(),
        }
    }
}

/// One attempt to send a delivery.
#[derive(SimpleObject, Clone)]
pub struct DeliveryAttempt {
    /// When.
    pub at: DateTime<Utc>,
    /// The HTTP status, if one came back.
    pub status_code: Option<i32>,
    /// How long it took, milliseconds.
    pub duration_ms: i64,
    /// What went wrong.
    pub error: Option<String>,
    /// How it ended.
    pub outcome: AttemptOutcome,
}

impl From<delivery_attempts::Model> for DeliveryAttempt {
    fn from(a: delivery_attempts::Model) -> Self {
        Self {
            at: a.attempted_at,
            status_code: a.status_code,
            duration_ms: a.duration_ms,
            error: a.error,
            outcome: AttemptOutcome::from_stored(&a.outcome).unwrap_or_else(|| {
                tracing::warn!(word = %a.outcome, "unknown delivery attempt outcome");
                AttemptOutcome::Retry
            }),
        }
    }
}

#[ComplexObject]
impl Delivery {
    /// True when it is for an agent with no endpoint: nothing is sent, and the agent reads it
    /// with the lookup route (so its attempts and next try mean nothing).
    async fn reads_by_lookup(&self, ctx: &Context<'_>) -> Result<bool> {
        if self.to_webhook {
            return Ok(false);
        }
        // The built-in default agent: its endpoint is the server's configured URL.
        let Some(agent_id) = self.agent_id else {
            return Ok(ctx.data::<Arc<Config>>()?.webhook_url.is_none());
        };
        let db = ctx.data::<Db>()?;
        registry::reads_by_lookup(db, agent_id).await.gql()
    }

    /// Every attempt, oldest first.
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn attempts(&self, ctx: &Context<'_>) -> Result<Vec<DeliveryAttempt>> {
        let db = ctx.data::<Db>()?;
        Ok(outbox::attempts_of(db, self.row_id)
            .await
            .gql()?
            .into_iter()
            .map(DeliveryAttempt::from)
            .collect())
    }
}

/// Delivery queries.
#[derive(Default)]
pub struct DeliveryQuery;

#[Object]
impl DeliveryQuery {
    /// Deliveries to the agent, failures first (admins only).
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn deliveries(
        &self,
        ctx: &Context<'_>,
        status: Option<DeliveryStatus>,
        #[graphql(desc = "An event name, e.g. `expert_answer.created`.")] event: Option<String>,
        first: Option<i32>,
    ) -> Result<Vec<Delivery>> {
        let db = ctx.data::<Db>()?;
        let viewer = caller_of(ctx)?.viewer();
        let event = event
            .map(|name| {
                EventType::parse(&name).ok_or_else(|| {
                    ServiceError::BadInput(format!("'{name}' is not an event askloop sends"))
                })
            })
            .transpose()
            .gql()?;
        let first = page_size(first).gql()?;
        Ok(
            outbox::list(db, viewer, status.map(Stored::from), event, first)
                .await
                .gql()?
                .into_iter()
                .map(Delivery::from)
                .collect(),
        )
    }
}

/// Delivery mutations.
#[derive(Default)]
pub struct DeliveryMutation;

#[Object]
impl DeliveryMutation {
    /// Send a delivery again now, with a fresh retry window; its envelope id stays the same.
    async fn redeliver(&self, ctx: &Context<'_>, id: ID) -> Result<Delivery> {
        let (db, caller) = writer(ctx)?;
        let id: i64 = id
            .parse()
            .map_err(|_| ServiceError::BadInput(format!("'{}' is not a delivery id", id.as_str())))
            .gql()?;
        Ok(outbox::redeliver(db, caller.viewer(), id, Utc::now())
            .await
            .gql()?
            .into())
    }
}
