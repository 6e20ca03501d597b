//! Operator webhooks (docs/contract.md#operator-webhooks): URLs a person registers for a niche
//! they belong to (an admin, for any niche) that hear of new and escalated questions — a small
//! signed JSON a chat bridge can forward. Their events are rows of `deliveries` (`webhook_id`),
//! written in the transaction that causes them and sent by the delivery worker with the agent's
//! retries and attempt log.
//!
//! A webhook hears of its niche only while its owner may ([`access::who_may_hear`]: an admin, or
//! an active member): that is checked when its deliveries are written and again when each is
//! sent, and a member who is suspended or leaves has what waits for their webhooks dropped at
//! once, with the reason on each. A member's webhook reaches only public addresses, and its
//! owner sees of a failed attempt no more than its status code or that the address was refused.

use crate::db::{Db, WriteTxn};
use chrono::{DateTime, Utc};
use entity::agent_questions::{self, Urgency};
use entity::deliveries::{self, DeliveryStatus};
use entity::{niche_members, niches, operator_webhooks};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, NotSet,
    QueryFilter, QueryOrder,
};
use serde_json::json;

use crate::domain::addresses::{NOT_PUBLIC, is_public};
use crate::domain::delivery::{TestSendLimits, next_test_send};
use crate::domain::sealing::{self, DataKey};
use crate::domain::text::cap;
use crate::error::{ServiceError, TEST_SENDS_PER_PERSON, TEST_SENDS_PER_WEBHOOK};
use crate::service::audit::{self, Actor, AuditEntry};
use crate::service::people::access::{self, Viewer};

/// How many live webhooks one person may have in one niche.
pub const PER_NICHE_MAX: usize = 5;

/// The longest title a webhook body carries.
pub const TITLE_MAX: usize = 200;

/// Why a delivery to a webhook was dropped: its owner may no longer hear of its niche.
pub const OWNER_DEPARTED: &str = "dropped: its owner is no longer an active member of the niche";

/// Which event a webhook hears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// A new question is waiting.
    Waiting,
    /// A question escalated (step 1).
    Escalated,
}

impl HookEvent {
    /// The event's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::Waiting => "question.waiting",
            HookEvent::Escalated => "question.escalated",
        }
    }
}

/// What a webhook body says of a question.
#[derive(Debug, Clone)]
pub struct QuestionFacts {
    /// Its id.
    pub id: i64,
    /// Its title.
    pub title: String,
    /// Its urgency.
    pub urgency: Urgency,
    /// When it expires.
    pub expires_at: DateTime<Utc>,
}

impl QuestionFacts {
    /// From a stored question.
    pub fn of(question: &agent_questions::Model) -> Self {
        Self {
            id: question.id,
            title: question.title.clone(),
            urgency: question.urgency,
            expires_at: question.expires_at,
        }
    }
}

/// The question page's path; the worker makes it absolute with the public origin when it sends.
pub fn question_path(niche_slug: &str, question_id: i64) -> String {
    format!("/dashboard/niches/{niche_slug}/questions/{question_id}")
}

/// Write one delivery per live webhook of `niche` and question in `questions`, on `txn`.
pub async fn enqueue(
    txn: &WriteTxn,
    event: HookEvent,
    niche: &niches::Model,
    questions: &[QuestionFacts],
    now: DateTime<Utc>,
) -> Result<(), ServiceError> {
    if questions.is_empty() {
        return Ok(());
    }
    let mut hooks = operator_webhooks::Entity::find()
        .filter(operator_webhooks::Column::NicheId.eq(niche.id))
        .filter(operator_webhooks::Column::RevokedAt.is_null())
        .all(txn)
        .await?;
    if hooks.is_empty() {
        return Ok(());
    }
    let owners: Vec<i64> = hooks.iter().map(|h| h.user_id).collect();
    let may_hear = access::who_may_hear(txn, &owners, niche.id).await?;
    hooks.retain(|hook| may_hear.contains(&hook.user_id));
    if hooks.is_empty() {
        return Ok(());
    }
    let mut rows = Vec::with_capacity(hooks.len() * questions.len());
    for hook in &hooks {
        for question in questions {
            rows.push(row(
                hook,
                event,
                niche,
                Some(question.id),
                body_fields(question, niche),
                false,
                now,
            ));
        }
    }
    deliveries::Entity::insert_many(rows)
        .exec_without_returning(txn)
        .await?;
    Ok(())
}

fn body_fields(question: &QuestionFacts, niche: &niches::Model) -> serde_json::Value {
    json!({
        "questionId": question.id,
        "title": cap(&plain(&question.title), TITLE_MAX),
        "urgency": crate::service::reach::urgency_name(question.urgency),
        "expiresAt": question.expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "url": question_path(&niche.slug, question.id),
    })
}

/// One line of plain text: control characters become spaces, and the invisible marks that
/// reorder text (bidi embeddings, overrides, isolates) are left out, so a title cannot make a
/// subject line or a chat message read backwards.
pub fn plain(text: &str) -> String {
    text.chars()
        .filter(|c| !is_bidi_control(*c))
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
    )
}

fn row(
    hook: &operator_webhooks::Model,
    event: HookEvent,
    niche: &niches::Model,
    question_id: Option<i64>,
    fields: serde_json::Value,
    single_attempt: bool,
    now: DateTime<Utc>,
) -> deliveries::ActiveModel {
    let envelope_id = format!("evt_{}", uuid::Uuid::new_v4().simple());
    let mut body = json!({
        "id": envelope_id,
        "type": event.as_str(),
        "niche": niche.slug,
    });
    if let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) {
        body.extend(fields.clone());
    }
    deliveries::ActiveModel {
        id: NotSet,
        envelope_id: Set(envelope_id),
        event_type: Set(event.as_str().to_owned()),
        niche_id: Set(niche.id),
        question_id: Set(question_id),
        agent_id: Set(None),
        webhook_id: Set(Some(hook.id)),
        body: Set(body.to_string()),
        status: Set(DeliveryStatus::Pending),
        attempts: Set(0),
        next_attempt_at: Set(now),
        claim_token: Set(None),
        claimed_until: Set(None),
        last_status_code: Set(None),
        last_error: Set(None),
        retry_from: Set(now),
        delivered_at: Set(None),
        dropped_reason: Set(None),
        single_attempt: Set(single_attempt),
        push_config_id: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
}

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

async fn own_hook<C: ConnectionTrait>(
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
fn no_longer_a_member() -> ServiceError {
    ServiceError::Forbidden(
        "you are no longer an active member of that webhook's niche; it hears nothing".into(),
    )
}

/// Whether `viewer` may still hear of `niche_id` (an admin, or an active member).
async fn may_hear<C: ConnectionTrait>(
    db: &C,
    viewer: &Viewer,
    niche_id: i64,
) -> Result<bool, ServiceError> {
    Ok(viewer.is_admin
        || access::who_may_hear(db, &[viewer.user_id], niche_id)
            .await?
            .contains(&viewer.user_id))
}

/// Queue a test event to one of the viewer's webhooks (`question.waiting` with `test: true` and
/// no question), sent once and never retried. At most `limits.per_webhook` per webhook and
/// `limits.per_person` per person within `limits.window`; past either, `RATE_LIMITED` says when
/// the next may go.
pub async fn send_test(
    db: &Db,
    viewer: &Viewer,
    id: i64,
    limits: &TestSendLimits,
    now: DateTime<Utc>,
) -> Result<deliveries::Model, ServiceError> {
    use sea_orm::QuerySelect;
    let txn = db.begin_write().await?;
    let hook = own_hook(&txn, viewer, id).await?;
    if !may_hear(&txn, viewer, hook.niche_id).await? {
        return Err(no_longer_a_member());
    }
    // One person's test sends queue here, so two at once cannot both fit the last place (on
    // SQLite the write transaction is already the only one).
    if txn.get_database_backend() == sea_orm::DbBackend::Postgres {
        entity::users::Entity::find_by_id(viewer.user_id)
            .select_only()
            .column(entity::users::Column::Id)
            .lock_exclusive()
            .into_tuple::<i64>()
            .one(&txn)
            .await?;
    }
    let since = now - chrono::Duration::from_std(limits.window).unwrap_or(chrono::Duration::MAX);
    let recent_tests = |limit: u32| {
        deliveries::Entity::find()
            .select_only()
            .column(deliveries::Column::CreatedAt)
            .filter(deliveries::Column::SingleAttempt.eq(true))
            .filter(deliveries::Column::CreatedAt.gt(since))
            .order_by_desc(deliveries::Column::CreatedAt)
            .limit(u64::from(limit.max(1)))
    };
    let this_hook: Vec<DateTime<Utc>> = recent_tests(limits.per_webhook)
        .filter(deliveries::Column::WebhookId.eq(hook.id))
        .into_tuple()
        .all(&txn)
        .await?;
    let mut own_hooks = sea_orm::sea_query::Query::select();
    own_hooks
        .column(operator_webhooks::Column::Id)
        .from(operator_webhooks::Entity)
        .and_where(operator_webhooks::Column::UserId.eq(viewer.user_id));
    let all_hooks: Vec<DateTime<Utc>> = recent_tests(limits.per_person)
        .filter(deliveries::Column::WebhookId.in_subquery(own_hooks))
        .into_tuple()
        .all(&txn)
        .await?;
    let minutes = limits.window.as_secs().div_ceil(60);
    for (sent, limit, reason, whose) in [
        (
            &this_hook,
            limits.per_webhook,
            TEST_SENDS_PER_WEBHOOK,
            "this webhook was",
        ),
        (
            &all_hooks,
            limits.per_person,
            TEST_SENDS_PER_PERSON,
            "your webhooks were",
        ),
    ] {
        // The newest `limit` within the window, newest first: once the last of them leaves the
        // window, one more fits.
        let count = u64::try_from(sent.len()).unwrap_or(u64::MAX);
        if let Some(wait) = next_test_send(count, limit, sent.last().copied(), limits.window, now) {
            return Err(ServiceError::RateLimited {
                message: format!(
                    "{whose} sent {limit} test events in the last {minutes} minutes; try again in {} s",
                    wait.as_secs()
                ),
                reason,
                retry_after: wait,
            });
        }
    }
    let niche = niches::Entity::find_by_id(hook.niche_id)
        .one(&txn)
        .await?
        .ok_or_else(|| ServiceError::NotFound("that webhook's niche is gone".into()))?;
    let fields = json!({
        "test": true,
        "questionId": null,
        "title": "A test from askloop's settings page",
        "urgency": "normal",
        "expiresAt": null,
        "url": "/dashboard/settings",
    });
    let delivery = row(&hook, HookEvent::Waiting, &niche, None, fields, true, now)
        .insert(&txn)
        .await?;
    txn.commit().await?;
    Ok(delivery)
}

/// A delivery to a webhook as its owner sees it.
#[derive(Debug, Clone)]
pub struct OwnerView {
    /// The row.
    pub delivery: deliveries::Model,
    /// What its last attempt came to, as far as its owner may know: the HTTP status, that the
    /// address was refused, or that no response came — never a resolver's or connection's
    /// words, which would tell a member what askloop's network looks like.
    pub last_error: Option<String>,
}

/// What the owner of a webhook is told of `delivery`'s last attempt.
pub fn shown_error(delivery: &deliveries::Model) -> Option<String> {
    let error = delivery.last_error.as_deref()?;
    if error == NOT_PUBLIC {
        return Some(NOT_PUBLIC.to_owned());
    }
    Some(match delivery.last_status_code {
        Some(code) => format!("HTTP {code}"),
        None => "no response".to_owned(),
    })
}

/// The most recent deliveries to one of the viewer's webhooks, newest first; refused once the
/// viewer is no longer an active member of its niche.
pub async fn recent_deliveries(
    db: &Db,
    viewer: &Viewer,
    id: i64,
    limit: u64,
) -> Result<Vec<OwnerView>, ServiceError> {
    use sea_orm::QuerySelect;
    let hook = own_hook(db, viewer, id).await?;
    if !may_hear(db, viewer, hook.niche_id).await? {
        return Err(no_longer_a_member());
    }
    Ok(deliveries::Entity::find()
        .filter(deliveries::Column::WebhookId.eq(hook.id))
        .order_by_desc(deliveries::Column::Id)
        .limit(limit.min(50))
        .all(db)
        .await?
        .into_iter()
        .map(|delivery| OwnerView {
            last_error: shown_error(&delivery),
            delivery,
        })
        .collect())
}

/// Inside the transaction that takes `user_id` out of `niche_id` (suspended, left): what waits
/// for their webhooks of that niche is dropped, with the reason on each. An admin keeps hearing.
pub async fn drop_for_departed(
    txn: &WriteTxn,
    user_id: i64,
    niche_id: i64,
    now: DateTime<Utc>,
) -> Result<u64, ServiceError> {
    let mut theirs = sea_orm::sea_query::Query::select();
    theirs
        .column(operator_webhooks::Column::Id)
        .from(operator_webhooks::Entity)
        .and_where(operator_webhooks::Column::UserId.eq(user_id))
        .and_where(operator_webhooks::Column::NicheId.eq(niche_id));
    let dropped = deliveries::Entity::update_many()
        .col_expr(
            deliveries::Column::Status,
            Expr::value(DeliveryStatus::Dropped),
        )
        .col_expr(
            deliveries::Column::DroppedReason,
            Expr::value(Some(OWNER_DEPARTED.to_owned())),
        )
        // A worker sending one right now finds its claim gone and changes nothing more.
        .col_expr(deliveries::Column::ClaimToken, Expr::value(None::<String>))
        .col_expr(
            deliveries::Column::ClaimedUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .col_expr(deliveries::Column::UpdatedAt, Expr::value(now))
        .filter(deliveries::Column::WebhookId.in_subquery(theirs))
        .filter(deliveries::Column::Status.eq(DeliveryStatus::Pending))
        .exec(txn)
        .await?;
    Ok(dropped.rows_affected)
}

/// Where a webhook's deliveries go, and whether they may go now.
#[derive(Debug, Clone)]
pub struct HookDestination {
    /// The URL.
    pub url: String,
    /// The signing secret.
    pub secret: String,
    /// Whether its owner is an admin: an admin's webhook may reach private addresses (a chat
    /// bridge on the same network); a member's reaches only public ones.
    pub owner_is_admin: bool,
    /// Whether its owner may still hear of its niche; if not, its deliveries are dropped.
    pub owner_may_hear: bool,
}

/// Where a delivery of `webhook_id` goes, if the webhook is still live.
pub async fn destination(
    db: &Db,
    key: Option<&DataKey>,
    webhook_id: i64,
) -> Result<Option<HookDestination>, ServiceError> {
    let Some(hook) = operator_webhooks::Entity::find_by_id(webhook_id)
        .filter(operator_webhooks::Column::RevokedAt.is_null())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let secret = sealing::reveal(key, &hook.secret).map_err(|e| {
        ServiceError::Internal(anyhow::anyhow!("an operator webhook's secret: {e}"))
    })?;
    let owner_is_admin = entity::users::Entity::find_by_id(hook.user_id)
        .one(db)
        .await?
        .is_some_and(|owner| owner.role == entity::users::UserRole::Admin);
    let owner_may_hear = owner_is_admin
        || access::who_may_hear(db, &[hook.user_id], hook.niche_id)
            .await?
            .contains(&hook.user_id);
    Ok(Some(HookDestination {
        url: hook.url,
        secret,
        owner_is_admin,
        owner_may_hear,
    }))
}

#[cfg(test)]
mod tests {
    use super::{PlainHttp, Viewer, check_scheme, is_private};

    #[test]
    fn plain_http_is_only_for_an_admins_local_or_own_host() {
        let member = Viewer {
            user_id: 1,
            handle: "ana".into(),
            is_admin: false,
        };
        let admin = Viewer {
            user_id: 2,
            handle: "root".into(),
            is_admin: true,
        };
        let plain = PlainHttp {
            own_host: Some("askloop.example.org".into()),
            anywhere: false,
        };
        for viewer in [&member, &admin] {
            assert!(check_scheme("https://hooks.example.com/x", viewer, &plain).is_ok());
            assert!(check_scheme("http://hooks.example.com/x", viewer, &plain).is_err());
        }
        for url in [
            "http://127.0.0.1:9/x",
            "http://localhost/x",
            "http://ASKLOOP.example.org/hooks",
        ] {
            assert!(check_scheme(url, &admin, &plain).is_ok(), "{url}");
            assert!(check_scheme(url, &member, &plain).is_err(), "{url}");
        }
        let no_origin = PlainHttp::default();
        assert!(check_scheme("http://askloop.example.org/", &admin, &no_origin).is_err());
        let tests = PlainHttp {
            own_host: None,
            anywhere: true,
        };
        assert!(check_scheme("http://hooks.example.com/x", &member, &tests).is_ok());
    }

    #[test]
    fn local_and_private_hosts_are_told_apart_from_public_ones() {
        for url in [
            "http://127.0.0.1:9/x",
            "http://10.1.2.3/",
            "http://192.168.0.10/",
            "http://172.16.5.5/",
            "http://169.254.169.254/latest",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://localhost:8080/",
            "http://chat.internal/",
            "http://bridge/",
        ] {
            assert!(is_private(url), "{url}");
        }
        for url in [
            "https://hooks.slack.com/services/x",
            "https://93.184.216.34/",
            "https://[2606:4700::1111]/",
        ] {
            assert!(!is_private(url), "{url}");
        }
    }
}
