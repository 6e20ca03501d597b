//! The two questions the signed routes and the delivery worker ask of the registry: which secrets
//! does this agent sign with, and where do its events go.

use std::collections::HashMap;

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::agent_niches;
use entity::agents::{self, AgentStatus, WebhookScheme};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::Asker;
use crate::domain::agents::AgentSlug;
use crate::domain::sealing::{self, DataKey};
use crate::domain::signing::SigningKeys;
use crate::error::ServiceError;

/// The secrets an agent's requests verify with now: the current one, and the previous one
/// until it retires.
fn keys_of(
    key: Option<&DataKey>,
    agent: &agents::Model,
    now: DateTime<Utc>,
) -> Result<(String, Option<String>), ServiceError> {
    let reveal = |stored: &str| {
        sealing::reveal(key, stored)
            .map_err(|err| ServiceError::Internal(anyhow::anyhow!("agent '{}': {err}", agent.slug)))
    };
    let current = reveal(&agent.secret_current)?;
    let previous = match (&agent.secret_previous, agent.previous_retires_at) {
        (Some(stored), Some(retires)) if retires > now => Some(reveal(stored)?),
        _ => None,
    };
    Ok((current, previous))
}

/// A registered agent as a signed request finds it: its row, its niches and the keys its
/// signature must match. None when no agent has that slug.
pub async fn signer(
    db: &Db,
    key: Option<&DataKey>,
    slug: &str,
    now: DateTime<Utc>,
) -> Result<Option<(Asker, AgentStatus, SigningKeys)>, ServiceError> {
    let Ok(slug) = AgentSlug::parse(slug) else {
        return Ok(None);
    };
    let Some(agent) = agents::Entity::find()
        .filter(agents::Column::Slug.eq(slug.as_str()))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let (current, previous) = keys_of(key, &agent, now)?;
    let niche_ids = agent_niches::Entity::find()
        .filter(agent_niches::Column::AgentId.eq(agent.id))
        .all(db)
        .await?
        .into_iter()
        .map(|r| r.niche_id)
        .collect();
    Ok(Some((
        Asker::Registered {
            id: agent.id,
            slug: agent.slug,
            niche_ids,
        },
        agent.status,
        SigningKeys::new(Some(current), previous),
    )))
}

/// An active registered agent with the secrets its outgoing messages are signed with now
/// (current first, then the previous one until it retires): what an A2A push is signed with.
/// None when it is disabled or gone.
pub async fn active_with_secrets(
    db: &Db,
    key: Option<&DataKey>,
    agent_id: i64,
    now: DateTime<Utc>,
) -> Result<Option<(agents::Model, Vec<String>)>, ServiceError> {
    let Some(agent) = agents::Entity::find_by_id(agent_id)
        .filter(agents::Column::Status.eq(AgentStatus::Active))
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let (current, previous) = keys_of(key, &agent, now)?;
    let secrets = std::iter::once(current).chain(previous).collect();
    Ok(Some((agent, secrets)))
}

/// Where a registered agent's events go now: URL, scheme and the secrets to sign with (current
/// first, then the previous one until it retires). None while it has no URL.
#[derive(Debug, Clone)]
pub struct Destination {
    /// The URL.
    pub url: String,
    /// The scheme.
    pub scheme: WebhookScheme,
    /// The secrets to sign with, current first.
    pub secrets: Vec<String>,
}

/// The destinations of the given agents (active ones with a URL), by id.
pub async fn destinations(
    db: &Db,
    key: Option<&DataKey>,
    agent_ids: &[i64],
    now: DateTime<Utc>,
) -> Result<HashMap<i64, Destination>, ServiceError> {
    let agents = agents::Entity::find()
        .filter(agents::Column::Id.is_in(agent_ids.to_vec()))
        .filter(agents::Column::Status.eq(AgentStatus::Active))
        .all(db)
        .await?;
    let mut found = HashMap::new();
    for agent in agents {
        let Some(url) = agent.webhook_url.clone() else {
            continue;
        };
        let (current, previous) = keys_of(key, &agent, now)?;
        found.insert(
            agent.id,
            Destination {
                url,
                scheme: agent.scheme,
                secrets: std::iter::once(current).chain(previous).collect(),
            },
        );
    }
    Ok(found)
}
