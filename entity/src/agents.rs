//! Registered agents (docs/contract.md#agents): who may ask, in which niches, with which secrets,
//! and where their events go. The built-in default agent has no row.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

/// One row of `agents`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "agents")]
pub struct Model {
    /// Primary key.
    #[sea_orm(primary_key)]
    pub id: i64,
    /// What the agent names itself with in `X-Askloop-Agent`; unique.
    #[sea_orm(unique)]
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Whether it may make signed requests and receive events.
    pub status: AgentStatus,
    /// The current signing secret as stored (sealed when `ASKLOOP_DATA_KEY` is set).
    pub secret_current: String,
    /// The previous secret as stored, accepted until `previous_retires_at`.
    pub secret_previous: Option<String>,
    /// When the previous secret stops being accepted.
    pub previous_retires_at: Option<DateTimeUtc>,
    /// Where its events are POSTed; none means they wait in the outbox.
    pub webhook_url: Option<String>,
    /// How its events are signed.
    pub scheme: WebhookScheme,
    /// The event type names it wants, as a JSON list; empty means all.
    pub event_types: Json,
    /// When it was registered.
    pub created_at: DateTimeUtc,
    /// When it last changed.
    pub updated_at: DateTimeUtc,
}

/// Relations are joined explicitly in the services; none are declared.
#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

/// Whether an agent is in service.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// `active`: its signed requests are served and its events sent.
    #[sea_orm(string_value = "active")]
    Active,
    /// `disabled`: its signed requests get 403; its events wait.
    #[sea_orm(string_value = "disabled")]
    Disabled,
}

/// How an agent's events are signed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, EnumIter, DeriveActiveEnum, Serialize, Deserialize,
)]
#[sea_orm(rs_type = "String", db_type = "String(StringLen::None)")]
#[serde(rename_all = "snake_case")]
pub enum WebhookScheme {
    /// `chovy`: `X-Chovy-Signature: t=…,v1=<hex>`.
    #[sea_orm(string_value = "chovy")]
    Chovy,
    /// `standard`: Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
    #[sea_orm(string_value = "standard")]
    Standard,
}
