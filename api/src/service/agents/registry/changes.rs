//! Registering agents and changing them — rotating their secrets, disabling and enabling them,
//! their niches and endpoints — each change audited (docs/contract.md#agents).

use std::collections::HashSet;

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Duration, Utc};
use entity::agents::{self, AgentStatus, WebhookScheme};
use entity::deliveries::{self, DeliveryStatus};
use entity::{agent_niches, niches};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet,
    QueryFilter, SqlErr,
};
use serde_json::json;

use super::listing::{AgentSummary, niche_slugs};
use super::{NAME_MAX, URL_MAX};
use crate::domain::agents::{AgentSlug, new_secret};
use crate::domain::delivery::EventType;
use crate::domain::sealing::{self, DataKey};
use crate::domain::text;
use crate::error::{Conflict, ServiceError};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

/// Where an agent's events go and how they are signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL events are POSTed to; none keeps them waiting in the outbox.
    pub url: Option<String>,
    /// How they are signed.
    pub scheme: WebhookScheme,
    /// The events wanted; empty means all.
    pub events: Vec<EventType>,
}

/// An agent to register.
#[derive(Debug, Clone)]
pub struct NewAgent {
    /// Its slug.
    pub slug: AgentSlug,
    /// Display name.
    pub name: String,
    /// The slugs of the niches it may ask in (at least one).
    pub niches: Vec<String>,
    /// Its endpoint.
    pub endpoint: Endpoint,
}

/// A secret just generated, to be shown once.
#[derive(Debug, Clone)]
pub struct WithSecret {
    /// The agent after the change.
    pub summary: AgentSummary,
    /// The new current secret, `whsec_<base64>`.
    pub secret: String,
}

/// The actor for an admin's change to the registry, or why there is none.
pub fn admin_actor(viewer: Option<&Viewer>) -> Result<Actor, ServiceError> {
    Ok(Actor::User(access::admin(viewer)?.user_id))
}

/// Parse event type names as the contract spells them.
pub fn parse_events<S: AsRef<str>>(names: &[S]) -> Result<Vec<EventType>, ServiceError> {
    let mut events = Vec::new();
    for name in names {
        let name = name.as_ref().trim();
        let event = EventType::parse(name).ok_or_else(|| {
            let known: Vec<&str> = EventType::ALL.iter().map(|e| e.as_str()).collect();
            ServiceError::BadInput(format!(
                "'{}' is not an event askloop sends (known: {})",
                name.chars().take(60).collect::<String>(),
                known.join(", ")
            ))
        })?;
        if !events.contains(&event) {
            events.push(event);
        }
    }
    Ok(events)
}

/// The event names an agent wants, as stored.
pub fn wanted_events(agent: &agents::Model) -> Vec<String> {
    agent
        .event_types
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn check_name(name: &str) -> Result<String, ServiceError> {
    let name = text::one_line("name", name.trim())?;
    if name.is_empty() || name.chars().count() > NAME_MAX {
        return Err(ServiceError::BadInput(format!(
            "an agent's name is 1 to {NAME_MAX} characters"
        )));
    }
    Ok(name.to_owned())
}

pub(crate) fn check_url(url: Option<&str>) -> Result<Option<String>, ServiceError> {
    let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    // The URL parser would quietly drop a tab or a line break; a URL is one line.
    let url = text::one_line("url", url)?;
    let bad = || {
        ServiceError::BadInput(format!(
            "the webhook URL must be an absolute http:// or https:// URL of at most {URL_MAX} \
             characters"
        ))
    };
    if url.len() > URL_MAX {
        return Err(bad());
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| bad())?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(bad());
    }
    Ok(Some(url.to_owned()))
}

/// The niches named by `slugs`, every one of which must exist; at least one.
async fn niches_named<C: ConnectionTrait>(
    conn: &C,
    slugs: &[String],
) -> Result<Vec<niches::Model>, ServiceError> {
    let wanted: Vec<String> = slugs
        .iter()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    if wanted.is_empty() {
        return Err(ServiceError::BadInput(
            "an agent needs at least one niche to ask in".into(),
        ));
    }
    let found = niches::Entity::find()
        .filter(niches::Column::Slug.is_in(wanted.clone()))
        .all(conn)
        .await?;
    let mut missing: Vec<&str> = wanted
        .iter()
        .filter(|slug| !found.iter().any(|n| &n.slug == *slug))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        missing.sort_unstable();
        return Err(ServiceError::BadInput(format!(
            "no niche {}",
            missing
                .iter()
                .map(|s| format!("'{}'", s.chars().take(63).collect::<String>()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(found)
}

async fn set_niche_rows(
    conn: &WriteTxn,
    agent_id: i64,
    niches: &[niches::Model],
) -> Result<(), ServiceError> {
    agent_niches::Entity::delete_many()
        .filter(agent_niches::Column::AgentId.eq(agent_id))
        .exec(conn)
        .await?;
    agent_niches::Entity::insert_many(niches.iter().map(|n| agent_niches::ActiveModel {
        agent_id: Set(agent_id),
        niche_id: Set(n.id),
    }))
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

fn events_json(events: &[EventType]) -> serde_json::Value {
    json!(events.iter().map(|e| e.as_str()).collect::<Vec<_>>())
}

fn scheme_word(scheme: WebhookScheme) -> &'static str {
    match scheme {
        WebhookScheme::Chovy => "chovy",
        WebhookScheme::Standard => "standard",
    }
}

async fn audit_agent(
    conn: &WriteTxn,
    actor: &Actor,
    action: &str,
    agent: &agents::Model,
    detail: serde_json::Value,
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    audit::record(
        conn,
        AuditEntry {
            actor,
            action,
            subject_type: "agent",
            subject_id: agent.id,
            niche_id: None,
            detail,
        },
        now,
    )
    .await?;
    Ok(())
}

/// Register an agent with a fresh secret (returned once; stored sealed when `key` is set).
pub async fn create(
    db: &Db,
    key: Option<&DataKey>,
    new: NewAgent,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<WithSecret, ServiceError> {
    let name = check_name(&new.name)?;
    let url = check_url(new.endpoint.url.as_deref())?;
    let secret = new_secret();
    let txn = db.begin_write().await?;
    let niches = niches_named(&txn, &new.niches).await?;
    let agent = agents::ActiveModel {
        id: NotSet,
        slug: Set(new.slug.as_str().to_owned()),
        name: Set(name),
        status: Set(AgentStatus::Active),
        secret_current: Set(sealing::store(key, &secret)),
        secret_previous: Set(None),
        previous_retires_at: Set(None),
        webhook_url: Set(url),
        scheme: Set(new.endpoint.scheme),
        event_types: Set(events_json(&new.endpoint.events)),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await
    .map_err(|err| match err.sql_err() {
        Some(SqlErr::UniqueConstraintViolation(_)) => {
            ServiceError::from(Conflict::AgentSlugTaken(new.slug.as_str().to_owned()))
        }
        _ => err.into(),
    })?;
    set_niche_rows(&txn, agent.id, &niches).await?;
    let mut slugs: Vec<String> = niches.into_iter().map(|n| n.slug).collect();
    slugs.sort();
    audit_agent(
        &txn,
        actor,
        "agent.created",
        &agent,
        json!({
            "slug": agent.slug,
            "niches": slugs,
            "webhookUrl": agent.webhook_url,
            "scheme": scheme_word(agent.scheme),
            "events": agent.event_types,
        }),
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(WithSecret {
        summary: AgentSummary {
            agent,
            niches: slugs,
        },
        secret,
    })
}

/// The agent with `slug`, or 404.
pub async fn find<C: ConnectionTrait>(conn: &C, slug: &str) -> Result<agents::Model, ServiceError> {
    agents::Entity::find()
        .filter(agents::Column::Slug.eq(slug))
        .one(conn)
        .await?
        .ok_or_else(|| {
            ServiceError::NotFound(format!(
                "no agent '{}'",
                slug.chars().take(60).collect::<String>()
            ))
        })
}

/// The longest a previous secret may stay accepted after a rotation: 30 days.
pub const MOST_RETIRE_SECS: i64 = 30 * 24 * 3600;

/// Give an agent a new current secret (returned once). The one it replaces stays accepted, and
/// is signed with too, for `retire_previous_in_secs` seconds from now (zero: retired at once).
pub async fn rotate(
    db: &Db,
    key: Option<&DataKey>,
    slug: &str,
    retire_previous_in_secs: i64,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<WithSecret, ServiceError> {
    // Checked as a number before it becomes a duration: any integer may arrive here.
    if !(0..=MOST_RETIRE_SECS).contains(&retire_previous_in_secs) {
        return Err(ServiceError::BadInput(
            "the previous secret retires within 0 seconds to 30 days".into(),
        ));
    }
    let retire_previous_in = Duration::seconds(retire_previous_in_secs);
    let secret = new_secret();
    let txn = db.begin_write().await?;
    let found = find(&txn, slug).await?;
    let retires_at = now + retire_previous_in;
    let mut row: agents::ActiveModel = found.clone().into();
    row.secret_previous = Set(Some(found.secret_current.clone()));
    row.previous_retires_at = Set(Some(retires_at));
    row.secret_current = Set(sealing::store(key, &secret));
    row.updated_at = Set(now);
    let agent = row.update(&txn).await?;
    audit_agent(
        &txn,
        actor,
        "agent.rotated",
        &agent,
        json!({ "previousRetiresAt": retires_at }),
        now,
    )
    .await?;
    let niches = niche_slugs(&txn, &[agent.id]).await?.remove(&agent.id);
    txn.commit().await?;
    Ok(WithSecret {
        summary: AgentSummary {
            agent,
            niches: niches.unwrap_or_default(),
        },
        secret,
    })
}

/// Disable or enable an agent. Enabling gives its waiting deliveries a fresh retry window: the
/// time they waited while it was disabled does not count against them.
pub async fn set_status(
    db: &Db,
    slug: &str,
    status: AgentStatus,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<AgentSummary, ServiceError> {
    let txn = db.begin_write().await?;
    let found = find(&txn, slug).await?;
    let was = found.status;
    let mut row: agents::ActiveModel = found.into();
    row.status = Set(status);
    row.updated_at = Set(now);
    let agent = row.update(&txn).await?;
    if was != status {
        if status == AgentStatus::Active {
            deliveries::Entity::update_many()
                .col_expr(deliveries::Column::RetryFrom, Expr::value(now))
                .col_expr(deliveries::Column::UpdatedAt, Expr::value(now))
                .filter(deliveries::Column::AgentId.eq(agent.id))
                .filter(deliveries::Column::Status.eq(DeliveryStatus::Pending))
                .exec(&txn)
                .await?;
        }
        let action = match status {
            AgentStatus::Active => "agent.enabled",
            AgentStatus::Disabled => "agent.disabled",
        };
        audit_agent(&txn, actor, action, &agent, json!({}), now).await?;
    }
    let niches = niche_slugs(&txn, &[agent.id]).await?.remove(&agent.id);
    txn.commit().await?;
    Ok(AgentSummary {
        agent,
        niches: niches.unwrap_or_default(),
    })
}

/// Replace the niches an agent may ask in (at least one; each must exist).
pub async fn set_niches(
    db: &Db,
    slug: &str,
    niche_slugs_wanted: &[String],
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<AgentSummary, ServiceError> {
    let txn = db.begin_write().await?;
    let found = find(&txn, slug).await?;
    let niches = niches_named(&txn, niche_slugs_wanted).await?;
    set_niche_rows(&txn, found.id, &niches).await?;
    let mut row: agents::ActiveModel = found.into();
    row.updated_at = Set(now);
    let agent = row.update(&txn).await?;
    let mut slugs: Vec<String> = niches.into_iter().map(|n| n.slug).collect();
    slugs.sort();
    audit_agent(
        &txn,
        actor,
        "agent.niches_set",
        &agent,
        json!({ "niches": slugs }),
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(AgentSummary {
        agent,
        niches: slugs,
    })
}

/// Replace an agent's endpoint: URL, scheme and the events it wants.
pub async fn set_endpoint(
    db: &Db,
    slug: &str,
    endpoint: Endpoint,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<AgentSummary, ServiceError> {
    let url = check_url(endpoint.url.as_deref())?;
    let txn = db.begin_write().await?;
    let found = find(&txn, slug).await?;
    let mut row: agents::ActiveModel = found.into();
    row.webhook_url = Set(url);
    row.scheme = Set(endpoint.scheme);
    row.event_types = Set(events_json(&endpoint.events));
    row.updated_at = Set(now);
    let agent = row.update(&txn).await?;
    audit_agent(
        &txn,
        actor,
        "agent.endpoint_set",
        &agent,
        json!({
            "webhookUrl": agent.webhook_url,
            "scheme": scheme_word(agent.scheme),
            "events": agent.event_types,
        }),
        now,
    )
    .await?;
    let niches = niche_slugs(&txn, &[agent.id]).await?.remove(&agent.id);
    txn.commit().await?;
    Ok(AgentSummary {
        agent,
        niches: niches.unwrap_or_default(),
    })
}
