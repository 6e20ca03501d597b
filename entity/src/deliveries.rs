//! The outbox: events for the agent and operator webhooks, each sent until it is delivered or
//! retries run out, unless it is dropped first.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `deliveries`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "deliveries")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The envelope id; never changes between attempts.
    #[sea_orm(unique)]
    pub envelope_id: String,
    /// `expert_answer.created`, `agent.research_requested`, `expert_question.expired` or
    /// `expert_question.dismissed`.
    pub event_type: String,
    /// The niche.
    pub niche_id: i64,
    /// The question, when the event is about one.
    pub question_id: Option<i64>,
    /// The registered agent whose endpoint it goes to; none for the built-in default agent.
    pub agent_id: Option<i64>,
    /// The operator webhook it goes to, for `question.waiting` and `question.escalated`.
    pub webhook_id: Option<i64>,
    /// The envelope exactly as POSTed.
    pub body: String,
    /// Where it is.
    pub status: DeliveryStatus,
    /// Attempts made so far.
    pub attempts: i64,
    /// When it may next be tried.
    pub next_attempt_at: DateTimeUtc,
    /// The current holder's claim, while one is sending it.
    pub claim_token: Option<String>,
    /// Until when the claim holds.
    pub claimed_until: Option<DateTimeUtc>,
    /// The last attempt's HTTP status, if it got one.
    pub last_status_code: Option<i32>,
    /// The last attempt's error, if any.
    pub last_error: Option<String>,
    /// Retries stop about three days after this.
    pub retry_from: DateTimeUtc,
    /// When the agent took it.
    pub delivered_at: Option<DateTimeUtc>,
    /// Why it was not sent, when it is `dropped`.
    pub dropped_reason: Option<String>,
    /// Tried once: a failed attempt is final (a webhook's test event).
    pub single_attempt: bool,
    /// The A2A push config it goes to, for `a2a.task_status` (docs/contract.md#a2a).
    pub push_config_id: Option<i64>,
    /// When it was written.
    pub created_at: DateTimeUtc,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Where a delivery is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// `pending`: waiting for its next attempt.
    #[sea_orm(string_value = "pending")]
    Pending,
    /// `delivered`: the agent answered 2xx.
    #[sea_orm(string_value = "delivered")]
    Delivered,
    /// `exhausted`: retries ran out; an admin may redeliver.
    #[sea_orm(string_value = "exhausted")]
    Exhausted,
    /// `dropped`: not sent, for the reason it carries (its webhook's owner left the niche).
    #[sea_orm(string_value = "dropped")]
    Dropped,
}
