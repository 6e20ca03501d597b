//! The agent registry for admins (docs/contract.md#agents): agents with their niches, endpoint
//! and recent deliveries; registering, rotating (the new secret is returned once), disabling,
//! enabling, and changing niches and endpoint. The service checks for an admin and audits.

use std::sync::Arc;

use crate::db::Db;
use async_graphql::{ComplexObject, Context, Enum, ID, InputObject, Object, Result, SimpleObject};
use chrono::{DateTime, Utc};
use entity::agents::{AgentStatus as Stored, WebhookScheme as StoredScheme};

use super::deliveries::Delivery;
use super::{caller_of, writer};
use crate::config::Config;
use crate::domain::agents::AgentSlug;
use crate::error::ServiceError;
use crate::graphql::error_door::GqlResultExt;
use crate::service::agents::registry::{
    self, AgentSummary, DEFAULT_RETIRE_PREVIOUS_SECS, Endpoint, NewAgent, WithSecret, parse_events,
    wanted_events,
};
use crate::service::questions::queue::page_size;

/// Whether an agent is in service.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
pub enum AgentStatus {
    /// Its signed requests are served and its events sent.
    Active,
    /// Its signed requests get 403; its events wait.
    Disabled,
}

/// How an agent's events are signed.
#[derive(Enum, Copy, Clone, Eq, PartialEq)]
pub enum WebhookScheme {
    /// `X-Chovy-Signature: t=…,v1=<hex>`.
    Chovy,
    /// Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`.
    Standard,
}

impl From<StoredScheme> for WebhookScheme {
    fn from(scheme: StoredScheme) -> Self {
        match scheme {
            StoredScheme::Chovy => WebhookScheme::Chovy,
            StoredScheme::Standard => WebhookScheme::Standard,
        }
    }
}

impl From<WebhookScheme> for StoredScheme {
    fn from(scheme: WebhookScheme) -> Self {
        match scheme {
            WebhookScheme::Chovy => StoredScheme::Chovy,
            WebhookScheme::Standard => StoredScheme::Standard,
        }
    }
}

/// Where an agent's events go.
#[derive(SimpleObject, Clone)]
pub struct AgentEndpoint {
    /// The URL; none keeps its events waiting in the outbox.
    pub url: Option<String>,
    /// How they are signed.
    pub scheme: WebhookScheme,
    /// The event types it wants; empty means all.
    pub events: Vec<String>,
}

/// A registered agent (its secrets are never shown here).
#[derive(SimpleObject, Clone)]
#[graphql(complex)]
pub struct Agent {
    /// Its id.
    pub id: ID,
    /// What it sends in `X-Askloop-Agent`.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Whether it is in service.
    pub status: AgentStatus,
    /// The slugs of the niches it may ask in.
    pub niches: Vec<String>,
    /// Its endpoint.
    pub endpoint: AgentEndpoint,
    /// Until when its previous secret is still accepted (none, or past: only the current one).
    pub previous_secret_retires_at: Option<DateTime<Utc>>,
    /// When it was registered.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    #[graphql(skip)]
    pub row_id: i64,
}

impl From<AgentSummary> for Agent {
    fn from(summary: AgentSummary) -> Self {
        let a = summary.agent;
        Self {
            id: ID(a.id.to_string()),
            endpoint: AgentEndpoint {
                url: a.webhook_url.clone(),
                scheme: a.scheme.into(),
                events: wanted_events(&a),
            },
            slug: a.slug,
            name: a.name,
            status: match a.status {
                Stored::Active => AgentStatus::Active,
                Stored::Disabled => AgentStatus::Disabled,
            },
            niches: summary.niches,
            previous_secret_retires_at: a.previous_retires_at,
            created_at: a.created_at,
            updated_at: a.updated_at,
            row_id: a.id,
        }
    }
}

#[ComplexObject]
impl Agent {
    /// Its newest deliveries, newest first.
    #[graphql(complexity = "crate::graphql::limits::page(first, child_complexity)")]
    async fn recent_deliveries(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
    ) -> Result<Vec<Delivery>> {
        let db = ctx.data::<Db>()?;
        let first = page_size(first).gql()?;
        Ok(registry::recent_deliveries(db, self.row_id, first)
            .await
            .gql()?
            .into_iter()
            .map(Delivery::from)
            .collect())
    }
}

/// An agent with a secret just generated: shown here once and never again.
#[derive(SimpleObject)]
pub struct AgentWithSecret {
    /// The agent.
    pub agent: Agent,
    /// Its new current signing secret, `whsec_<base64>`.
    pub secret: String,
}

impl From<WithSecret> for AgentWithSecret {
    fn from(created: WithSecret) -> Self {
        Self {
            agent: created.summary.into(),
            secret: created.secret,
        }
    }
}

/// An agent's endpoint.
#[derive(InputObject)]
pub struct AgentEndpointInput {
    /// Where its events are POSTed; none keeps them waiting in the outbox.
    pub url: Option<String>,
    /// How they are signed.
    #[graphql(default_with = "WebhookScheme::Chovy")]
    pub scheme: WebhookScheme,
    /// The event types it wants (e.g. `expert_answer.created`); empty means all.
    #[graphql(default)]
    pub events: Vec<String>,
}

impl AgentEndpointInput {
    fn parse(self) -> Result<Endpoint, ServiceError> {
        Ok(Endpoint {
            url: self.url,
            scheme: self.scheme.into(),
            events: parse_events(&self.events)?,
        })
    }
}

/// An agent to register.
#[derive(InputObject)]
pub struct CreateAgentInput {
    /// 2..40 of a-z, 0-9 and '-'.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// The slugs of the niches it may ask in (at least one).
    pub niches: Vec<String>,
    /// Its endpoint (none: its events wait in the outbox).
    pub endpoint: Option<AgentEndpointInput>,
}

fn data_key<'a>(ctx: &Context<'a>) -> Result<Option<&'a crate::domain::sealing::DataKey>> {
    Ok(ctx.data::<Arc<Config>>()?.data_key.as_ref())
}

/// Agent registry queries.
#[derive(Default)]
pub struct AgentQuery;

#[Object]
impl AgentQuery {
    /// Every registered agent, by slug (admins only).
    #[graphql(complexity = "crate::graphql::limits::list(child_complexity)")]
    async fn agents(&self, ctx: &Context<'_>) -> Result<Vec<Agent>> {
        let db = ctx.data::<Db>()?;
        Ok(registry::list_for_admin(db, caller_of(ctx)?.viewer())
            .await
            .gql()?
            .into_iter()
            .map(Agent::from)
            .collect())
    }
}

/// Agent registry mutations (admins only; each audited).
#[derive(Default)]
pub struct AgentMutation;

#[Object]
impl AgentMutation {
    /// Register an agent; its signing secret is returned here once.
    async fn create_agent(
        &self,
        ctx: &Context<'_>,
        input: CreateAgentInput,
    ) -> Result<AgentWithSecret> {
        let (db, caller) = writer(ctx)?;
        let actor = registry::admin_actor(caller.viewer()).gql()?;
        let new = NewAgent {
            slug: AgentSlug::parse(&input.slug)
                .map_err(|e| ServiceError::BadInput(e.to_string()))
                .gql()?,
            name: input.name,
            niches: input.niches,
            endpoint: match input.endpoint {
                Some(endpoint) => endpoint.parse().gql()?,
                None => Endpoint {
                    url: None,
                    scheme: StoredScheme::Chovy,
                    events: Vec::new(),
                },
            },
        };
        Ok(
            registry::create(db, data_key(ctx)?, new, &actor, Utc::now())
                .await
                .gql()?
                .into(),
        )
    }

    /// Give an agent a new signing secret, returned here once; the previous one stays accepted
    /// (and signed with) for `retirePreviousInSeconds` (0: retired at once).
    async fn rotate_agent_secret(
        &self,
        ctx: &Context<'_>,
        slug: String,
        #[graphql(default_with = "DEFAULT_RETIRE_PREVIOUS_SECS")] retire_previous_in_seconds: i64,
    ) -> Result<AgentWithSecret> {
        let (db, caller) = writer(ctx)?;
        let actor = registry::admin_actor(caller.viewer()).gql()?;
        Ok(registry::rotate(
            db,
            data_key(ctx)?,
            &slug,
            retire_previous_in_seconds,
            &actor,
            Utc::now(),
        )
        .await
        .gql()?
        .into())
    }

    /// Disable an agent: its signed requests get 403, its events wait.
    async fn disable_agent(&self, ctx: &Context<'_>, slug: String) -> Result<Agent> {
        let (db, caller) = writer(ctx)?;
        let actor = registry::admin_actor(caller.viewer()).gql()?;
        Ok(
            registry::set_status(db, &slug, Stored::Disabled, &actor, Utc::now())
                .await
                .gql()?
                .into(),
        )
    }

    /// Enable an agent; its waiting events are sent.
    async fn enable_agent(&self, ctx: &Context<'_>, slug: String) -> Result<Agent> {
        let (db, caller) = writer(ctx)?;
        let actor = registry::admin_actor(caller.viewer()).gql()?;
        Ok(
            registry::set_status(db, &slug, Stored::Active, &actor, Utc::now())
                .await
                .gql()?
                .into(),
        )
    }

    /// Replace the niches an agent may ask in.
    async fn set_agent_niches(
        &self,
        ctx: &Context<'_>,
        slug: String,
        niches: Vec<String>,
    ) -> Result<Agent> {
        let (db, caller) = writer(ctx)?;
        let actor = registry::admin_actor(caller.viewer()).gql()?;
        Ok(registry::set_niches(db, &slug, &niches, &actor, Utc::now())
            .await
            .gql()?
            .into())
    }

    /// Replace an agent's endpoint: URL, scheme and the events it wants.
    async fn set_agent_endpoint(
        &self,
        ctx: &Context<'_>,
        slug: String,
        endpoint: AgentEndpointInput,
    ) -> Result<Agent> {
        let (db, caller) = writer(ctx)?;
        let actor = registry::admin_actor(caller.viewer()).gql()?;
        let endpoint = endpoint.parse().gql()?;
        Ok(
            registry::set_endpoint(db, &slug, endpoint, &actor, Utc::now())
                .await
                .gql()?
                .into(),
        )
    }
}
