//! Agent tokens (docs/contract.md#mcp): the bearer tokens a registered agent reaches the MCP
//! server with. A token is issued per agent, is distinct from its signing secrets, is shown once
//! and stored only as its SHA-256 (it is 32 random bytes, so no salt or slow hash is needed), and
//! is revoked for good. Issuing and revoking are audited on the agent.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::agent_niches;
use entity::agent_tokens;
use entity::agents::{self, AgentStatus};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, NotSet, QueryFilter};
use serde_json::json;

use crate::domain::tokens::{new_token, token_hash};
use crate::error::ServiceError;
use crate::service::agents::registry::{Asker, find};
use crate::service::audit::{self, Actor, AuditEntry};

/// Every agent token starts with this (sessions with `al_sess_`, API keys with `al_key_`).
pub const AGENT_TOKEN_PREFIX: &str = "al_agent_";

/// How many of a token's first characters are kept to recognise it: the prefix and 8 hex digits.
pub const SHOWN_PREFIX_CHARS: usize = AGENT_TOKEN_PREFIX.len() + 8;

/// A token just issued, to be shown once.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    /// The row (its hash only).
    pub row: agent_tokens::Model,
    /// The token to hand to the agent.
    pub token: String,
}

/// Who a bearer token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenHolder {
    /// An active agent.
    Active(Asker),
    /// A disabled agent: its token is good but the agent is refused (403).
    Disabled,
}

/// Issue a new token for the agent `slug` (its other live tokens stay valid, so a new one can be
/// rolled out before the old one is revoked).
pub async fn issue(
    db: &Db,
    slug: &str,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<IssuedToken, ServiceError> {
    let token = new_token(AGENT_TOKEN_PREFIX);
    let txn = db.begin_write().await?;
    let agent = find(&txn, slug).await?;
    let row = agent_tokens::Entity::insert(agent_tokens::ActiveModel {
        id: NotSet,
        agent_id: Set(agent.id),
        prefix: Set(token.chars().take(SHOWN_PREFIX_CHARS).collect()),
        token_hash: Set(token_hash(&token)),
        created_at: Set(now),
        revoked_at: Set(None),
    })
    .exec_with_returning(&txn)
    .await?;
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "agent.token_issued",
            subject_type: "agent",
            subject_id: agent.id,
            niche_id: None,
            detail: json!({ "slug": agent.slug, "prefix": row.prefix }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(IssuedToken { row, token })
}

/// Revoke the agent's live tokens — all of them, or only the one shown as `prefix` — and
/// return the prefixes revoked (none: nothing was live, and nothing is audited).
pub async fn revoke(
    db: &Db,
    slug: &str,
    prefix: Option<&str>,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Result<Vec<String>, ServiceError> {
    let txn = db.begin_write().await?;
    let agent = find(&txn, slug).await?;
    let mut live = agent_tokens::Entity::find()
        .filter(agent_tokens::Column::AgentId.eq(agent.id))
        .filter(agent_tokens::Column::RevokedAt.is_null())
        .all(&txn)
        .await?;
    if let Some(prefix) = prefix {
        live.retain(|t| t.prefix == prefix.trim());
    }
    if live.is_empty() {
        txn.rollback().await?;
        return Ok(Vec::new());
    }
    let ids: Vec<i64> = live.iter().map(|t| t.id).collect();
    agent_tokens::Entity::update_many()
        .col_expr(agent_tokens::Column::RevokedAt, Expr::value(Some(now)))
        .filter(agent_tokens::Column::Id.is_in(ids))
        .exec(&txn)
        .await?;
    let prefixes: Vec<String> = live.into_iter().map(|t| t.prefix).collect();
    audit::record(
        &txn,
        AuditEntry {
            actor,
            action: "agent.tokens_revoked",
            subject_type: "agent",
            subject_id: agent.id,
            niche_id: None,
            detail: json!({ "slug": agent.slug, "prefixes": prefixes }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(prefixes)
}

/// Who `token` speaks for: none when it is not a live agent token (unknown, revoked, or not one
/// at all).
pub async fn resolve(db: &Db, token: &str) -> Result<Option<TokenHolder>, ServiceError> {
    if !token.starts_with(AGENT_TOKEN_PREFIX) {
        return Ok(None);
    }
    let Some(row) = agent_tokens::Entity::find()
        .filter(agent_tokens::Column::TokenHash.eq(token_hash(token)))
        .filter(agent_tokens::Column::RevokedAt.is_null())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let Some(agent) = agents::Entity::find_by_id(row.agent_id).one(db).await? else {
        return Ok(None);
    };
    if agent.status == AgentStatus::Disabled {
        return Ok(Some(TokenHolder::Disabled));
    }
    let niche_ids = agent_niches::Entity::find()
        .filter(agent_niches::Column::AgentId.eq(agent.id))
        .all(db)
        .await?
        .into_iter()
        .map(|r| r.niche_id)
        .collect();
    Ok(Some(TokenHolder::Active(Asker::Registered {
        id: agent.id,
        slug: agent.slug,
        niche_ids,
    })))
}
