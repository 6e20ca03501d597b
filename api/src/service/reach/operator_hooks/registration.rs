//! Registering and removing operator webhooks: who may register one for a niche, which URLs a
//! webhook may have (`https://`, and a member's only public hosts), and the owner's list.

use crate::db::Db;
use chrono::{DateTime, Utc};
use entity::{niche_members, niches, operator_webhooks};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet,
    QueryFilter, QueryOrder,
};
use serde_json::json;

use super::PER_NICHE_MAX;
use crate::domain::addresses::is_public;
use crate::domain::sealing::{self, DataKey};
use crate::domain::text::cap;
use crate::error::ServiceError;
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

/// Whether `url` names this machine or a private network by its host as written: a member's
/// webhook must not make askloop probe what only askloop can reach (its attempts are shown to
/// them). This refuses the obvious at registration; a name that resolves to such an address is
/// refused at every delivery, where the address connected to is checked
/// ([`crate::domain::addresses`]).
pub fn is_private(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return true;
    };
    let Some(host) = parsed.host_str() else {
        return true;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => !is_public(ip),
        Err(_) => {
            let name = host.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost"
                || [".localhost", ".local", ".internal", ".lan", ".home.arpa"]
                    .iter()
                    .any(|suffix| name.ends_with(suffix))
                || !name.contains('.')
        }
    }
}

/// A registered webhook as its owner sees it (never its secret).
#[derive(Debug, Clone)]
pub struct Hook {
    /// The row.
    pub hook: operator_webhooks::Model,
    /// Its niche's slug.
    pub niche_slug: String,
}

/// The niche `slug` if `viewer` may register webhooks for it: an active member, or an admin.
async fn niche_for<C: ConnectionTrait>(
    db: &C,
    viewer: &Viewer,
    slug: &str,
) -> Result<niches::Model, ServiceError> {
    let missing = || ServiceError::NotFound(format!("no niche {} of yours", cap(slug.trim(), 80)));
    let niche = niches::Entity::find()
        .filter(niches::Column::Slug.eq(slug.trim().to_lowercase()))
        .one(db)
        .await?
        .ok_or_else(missing)?;
    if viewer.is_admin {
        return Ok(niche);
    }
    let member = niche_members::Entity::find()
        .filter(niche_members::Column::UserId.eq(viewer.user_id))
        .filter(niche_members::Column::NicheId.eq(niche.id))
        .filter(niche_members::Column::Status.eq(niche_members::MemberStatus::Active))
        .one(db)
        .await?;
    member.map(|_| niche).ok_or_else(missing)
}

/// Where a plain `http://` operator webhook is accepted; everywhere else it must be `https://`.
#[derive(Debug, Clone, Default)]
pub struct PlainHttp {
    /// This deployment's own host (from its public origin): an admin may point a webhook at it
    /// over plain HTTP, as at a local host.
    pub own_host: Option<String>,
    /// Plain HTTP anywhere (tests, whose receivers speak plain HTTP under made-up names).
    pub anywhere: bool,
}

impl PlainHttp {
    /// What `config` allows.
    pub fn of(config: &crate::config::Config) -> Self {
        Self {
            own_host: config
                .public_origin
                .as_deref()
                .and_then(|o| reqwest::Url::parse(o).ok())
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase)),
            anywhere: config.delivery.plain_http_hooks,
        }
    }
}

/// An operator webhook is sent over `https://`; plain `http://` only to an admin's webhook at a
/// local or private host or at this deployment's own host (what only an admin may reach anyway).
pub fn check_scheme(url: &str, viewer: &Viewer, plain: &PlainHttp) -> Result<(), ServiceError> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Err(ServiceError::BadInput(
            "a webhook needs an absolute URL".into(),
        ));
    };
    if parsed.scheme() != "http" || plain.anywhere {
        return Ok(());
    }
    let host = parsed.host_str().map(str::to_ascii_lowercase);
    let own = host.is_some() && host == plain.own_host;
    if viewer.is_admin && (own || is_private(url)) {
        return Ok(());
    }
    Err(ServiceError::BadInput(
        "an operator webhook must use https:// (plain http:// is accepted only for an admin's \
         webhook to this deployment's own host or a local one)"
            .into(),
    ))
}

/// Register `url` for `niche_slug`: the webhook and its signing secret, shown this once.
/// A plain `http://` URL is refused unless [`check_scheme`] allows it under `schemes`.
pub async fn register(
    db: &Db,
    key: Option<&DataKey>,
    viewer: &Viewer,
    niche_slug: &str,
    url: &str,
    schemes: &PlainHttp,
    now: DateTime<Utc>,
) -> Result<(Hook, String), ServiceError> {
    let url = crate::service::agents::registry::check_url(Some(url))?
        .ok_or_else(|| ServiceError::BadInput("a webhook needs a URL".into()))?;
    check_scheme(&url, viewer, schemes)?;
    if !viewer.is_admin && is_private(&url) {
        return Err(ServiceError::BadInput(
            "only an admin may register a webhook to a local or private address".into(),
        ));
    }
    let txn = db.begin_write().await?;
    let niche = niche_for(&txn, viewer, niche_slug).await?;
    let live = operator_webhooks::Entity::find()
        .filter(operator_webhooks::Column::UserId.eq(viewer.user_id))
        .filter(operator_webhooks::Column::NicheId.eq(niche.id))
        .filter(operator_webhooks::Column::RevokedAt.is_null())
        .all(&txn)
        .await?;
    if live.len() >= PER_NICHE_MAX {
        return Err(ServiceError::BadInput(format!(
            "at most {PER_NICHE_MAX} webhooks per niche; remove one first"
        )));
    }
    let secret = format!("whsec_{}", hex::encode(rand::random::<[u8; 24]>()));
    let hook = operator_webhooks::ActiveModel {
        id: NotSet,
        user_id: Set(viewer.user_id),
        niche_id: Set(niche.id),
        url: Set(url.clone()),
        secret: Set(sealing::store(key, &secret)),
        created_at: Set(now),
        revoked_at: Set(None),
    }
    .insert(&txn)
    .await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action: "operator_webhook.registered",
            subject_type: "operator_webhook",
            subject_id: hook.id,
            niche_id: Some(niche.id),
            detail: json!({ "url": url }),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok((
        Hook {
            hook,
            niche_slug: niche.slug,
        },
        secret,
    ))
}

/// The viewer's live webhooks, newest first.
pub async fn mine(db: &Db, viewer: &Viewer) -> Result<Vec<Hook>, ServiceError> {
    let hooks = operator_webhooks::Entity::find()
        .filter(operator_webhooks::Column::UserId.eq(viewer.user_id))
        .filter(operator_webhooks::Column::RevokedAt.is_null())
        .order_by_desc(operator_webhooks::Column::Id)
        .all(db)
        .await?;
    let ids: Vec<i64> = hooks.iter().map(|h| h.niche_id).collect();
    let slugs: std::collections::HashMap<i64, String> = niches::Entity::find()
        .filter(niches::Column::Id.is_in(ids))
        .all(db)
        .await?
        .into_iter()
        .map(|n| (n.id, n.slug))
        .collect();
    Ok(hooks
        .into_iter()
        .map(|hook| Hook {
            niche_slug: slugs.get(&hook.niche_id).cloned().unwrap_or_default(),
            hook,
        })
        .collect())
}

pub(super) async fn own_hook<C: ConnectionTrait>(
    db: &C,
    viewer: &Viewer,
    id: i64,
) -> Result<operator_webhooks::Model, ServiceError> {
    operator_webhooks::Entity::find_by_id(id)
        .filter(operator_webhooks::Column::UserId.eq(viewer.user_id))
        .filter(operator_webhooks::Column::RevokedAt.is_null())
        .one(db)
        .await?
        .ok_or_else(|| ServiceError::NotFound("no such webhook of yours".into()))
}

/// Remove one of the viewer's webhooks: it receives nothing more (what is queued for it waits
/// unsent).
pub async fn remove(
    db: &Db,
    viewer: &Viewer,
    id: i64,
    now: DateTime<Utc>,
) -> Result<bool, ServiceError> {
    let txn = db.begin_write().await?;
    let hook = own_hook(&txn, viewer, id).await?;
    operator_webhooks::Entity::update_many()
        .col_expr(operator_webhooks::Column::RevokedAt, Expr::value(Some(now)))
        .filter(operator_webhooks::Column::Id.eq(hook.id))
        .exec(&txn)
        .await?;
    audit::record(
        &txn,
        AuditEntry {
            actor: &Actor::User(viewer.user_id),
            action: "operator_webhook.removed",
            subject_type: "operator_webhook",
            subject_id: hook.id,
            niche_id: Some(hook.niche_id),
            detail: json!({}),
        },
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(true)
}

/// The error for a webhook owner who may no longer hear of its niche.
pub(super) fn no_longer_a_member() -> ServiceError {
    ServiceError::Forbidden(
        "you are no longer an active member of that webhook's niche; it hears nothing".into(),
    )
}

/// Whether `viewer` may still hear of `niche_id` (an admin, or an active member).
pub(super) async fn may_hear<C: ConnectionTrait>(
    db: &C,
    viewer: &Viewer,
    niche_id: i64,
) -> Result<bool, ServiceError> {
    Ok(viewer.is_admin
        || access::who_may_hear(db, &[viewer.user_id], niche_id)
            .await?
            .contains(&viewer.user_id))
}
