//! The agent registry (docs/contract.md#agents): registering agents, rotating their secrets,
//! disabling and enabling them, their niches and endpoints — every change audited — and the two
//! questions the signed routes and the delivery worker ask of it: which secrets does this agent
//! sign with, and where do its events go.
//!
//! The built-in default agent (no `X-Askloop-Agent` header) has no row: its secrets are
//! `CHOVY_SIGNING_SECRET(_PREVIOUS)`, its endpoint `CHOVY_WEBHOOK_URL`, and it may ask anywhere.

use std::collections::{HashMap, HashSet};

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Duration, Utc};
use entity::agents::{self, AgentStatus, WebhookScheme};
use entity::deliveries::{self, DeliveryStatus};
use entity::{agent_niches, niches};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet,
    QueryFilter, QueryOrder, QuerySelect, SqlErr,
};
use serde_json::json;

use crate::domain::agents::{AgentSlug, new_secret};
use crate::domain::delivery::EventType;
use crate::domain::sealing::{self, DataKey};
use crate::domain::signing::SigningKeys;
use crate::domain::text;
use crate::error::{Conflict, ServiceError};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

/// How long a rotated-out secret stays accepted when nobody says otherwise: one day.
pub const DEFAULT_RETIRE_PREVIOUS_SECS: i64 = 24 * 3600;
/// The longest an agent's name may be.
pub const NAME_MAX: usize = 120;
/// The longest webhook URL accepted.
pub const URL_MAX: usize = 2000;

/// Who is making a signed request: the built-in default agent, or a registered one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asker {
    /// No `X-Askloop-Agent` header: `CHOVY_SIGNING_SECRET`'s agent, which may ask in every niche.
    Default,
    /// A registered agent, already verified and active.
    Registered {
        /// Its id.
        id: i64,
        /// Its slug.
        slug: String,
        /// The niches it may ask in.
        niche_ids: Vec<i64>,
    },
}

impl Asker {
    /// The registered agent's id, or none for the default agent (as questions store it).
    pub fn agent_id(&self) -> Option<i64> {
        match self {
            Asker::Default => None,
            Asker::Registered { id, .. } => Some(*id),
        }
    }

    /// Whether this agent may ask (or book revenue) in `niche_id`.
    pub fn may_use_niche(&self, niche_id: i64) -> bool {
        match self {
            Asker::Default => true,
            Asker::Registered { niche_ids, .. } => niche_ids.contains(&niche_id),
        }
    }

    /// The refusal for a niche that is not this agent's (asked after the signature passed).
    pub fn not_your_niche(slug: &str) -> ServiceError {
        ServiceError::Forbidden(format!("this agent may not ask in '{slug}'"))
    }
}

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

/// An agent with what an admin reads beside it.
#[derive(Debug, Clone)]
pub struct AgentSummary {
    /// The row (its secrets stay sealed in it; never shown).
    pub agent: agents::Model,
    /// The slugs of its niches, sorted.
    pub niches: Vec<String>,
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
