//! Reading the registry: the agents with their niches (for the admin pages and the CLI), an
//! agent's newest deliveries, and whether it reads its answers by lookup.

use std::collections::HashMap;

use crate::db::Db;
use entity::agents;
use entity::deliveries;
use entity::{agent_niches, niches};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use crate::error::ServiceError;
use crate::service::people::access::{self, Viewer};

/// An agent with what an admin reads beside it.
#[derive(Debug, Clone)]
pub struct AgentSummary {
    /// The row (its secrets stay sealed in it; never shown).
    pub agent: agents::Model,
    /// The slugs of its niches, sorted.
    pub niches: Vec<String>,
}

/// Whether agent `agent_id` reads its answers by lookup (it exists and has no webhook).
pub async fn reads_by_lookup<C: ConnectionTrait>(
    conn: &C,
    agent_id: i64,
) -> Result<bool, ServiceError> {
    let agent = agents::Entity::find_by_id(agent_id).one(conn).await?;
    Ok(agent.is_some_and(|a| a.webhook_url.is_none()))
}

/// The slugs of each agent's niches, sorted, in one query.
pub async fn niche_slugs<C: ConnectionTrait>(
    conn: &C,
    agent_ids: &[i64],
) -> Result<HashMap<i64, Vec<String>>, ServiceError> {
    let rows = agent_niches::Entity::find()
        .filter(agent_niches::Column::AgentId.is_in(agent_ids.to_vec()))
        .all(conn)
        .await?;
    let niche_ids: Vec<i64> = rows.iter().map(|r| r.niche_id).collect();
    let slugs: HashMap<i64, String> = niches::Entity::find()
        .filter(niches::Column::Id.is_in(niche_ids))
        .all(conn)
        .await?
        .into_iter()
        .map(|n| (n.id, n.slug))
        .collect();
    let mut by_agent: HashMap<i64, Vec<String>> = HashMap::new();
    for row in rows {
        if let Some(slug) = slugs.get(&row.niche_id) {
            by_agent.entry(row.agent_id).or_default().push(slug.clone());
        }
    }
    for list in by_agent.values_mut() {
        list.sort();
    }
    Ok(by_agent)
}

/// Every registered agent with its niches, by slug.
pub async fn list(db: &Db) -> Result<Vec<AgentSummary>, ServiceError> {
    let agents = agents::Entity::find()
        .order_by_asc(agents::Column::Slug)
        .all(db)
        .await?;
    let ids: Vec<i64> = agents.iter().map(|a| a.id).collect();
    let mut niches = niche_slugs(db, &ids).await?;
    Ok(agents
        .into_iter()
        .map(|agent| AgentSummary {
            niches: niches.remove(&agent.id).unwrap_or_default(),
            agent,
        })
        .collect())
}

/// Every registered agent, for an admin.
pub async fn list_for_admin(
    db: &Db,
    viewer: Option<&Viewer>,
) -> Result<Vec<AgentSummary>, ServiceError> {
    access::admin(viewer)?;
    list(db).await
}

/// An agent's newest deliveries, newest first.
pub async fn recent_deliveries(
    db: &Db,
    agent_id: i64,
    limit: u64,
) -> Result<Vec<deliveries::Model>, ServiceError> {
    Ok(deliveries::Entity::find()
        .filter(deliveries::Column::AgentId.eq(agent_id))
        .order_by_desc(deliveries::Column::Id)
        .limit(limit)
        .all(db)
        .await?)
}
